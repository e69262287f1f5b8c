package logwriter

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// An interval long enough that only size, Flush and Close trigger writes.
const never = time.Hour

func TestBatchesBySize(t *testing.T) {
	sink := &fakeSink{}
	w := New[int](sink, Config{MaxBatch: 10, FlushInterval: never})
	closeWriter(t, w)

	for i := range 25 {
		w.Write(i)
	}
	if err := w.Flush(testContext(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}

	if got, want := sink.batchSizes(), []int{10, 10, 5}; !slices.Equal(got, want) {
		t.Errorf("batch sizes = %v, want %v", got, want)
	}
	if got, want := sink.rows(), sequence(25); !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if got := w.Stats(); got != (Stats{Written: 25}) {
		t.Errorf("Stats = %+v, want Written 25", got)
	}
}

func TestFlushesByIntervalWithoutFlush(t *testing.T) {
	sink := &fakeSink{}
	w := New[int](sink, Config{MaxBatch: 100, FlushInterval: 20 * time.Millisecond})
	closeWriter(t, w)

	for i := range 3 {
		w.Write(i)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(sink.rows()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("rows = %v after 2s, want 3 rows written by the interval", sink.rows())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, want := sink.batchSizes(), []int{3}; !slices.Equal(got, want) {
		t.Errorf("batch sizes = %v, want %v", got, want)
	}
}

func TestCloseFlushesAndLaterWritesAreDropped(t *testing.T) {
	var logs bytes.Buffer
	sink := &fakeSink{}
	w := New[int](sink, Config{
		MaxBatch:      1000,
		FlushInterval: never,
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
	})

	for i := range 100 {
		w.Write(i)
	}
	if err := w.Close(testContext(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, want := sink.rows(), sequence(100); !slices.Equal(got, want) {
		t.Fatalf("rows after Close = %v, want %v", got, want)
	}

	w.Write(100)
	if err := w.Close(testContext(t)); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Flush(testContext(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
	if got := len(sink.rows()); got != 100 {
		t.Errorf("%d rows persisted, want 100: a write after Close reached the sink", got)
	}
	if got, want := w.Stats(), (Stats{Written: 100, Dropped: 1}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if !strings.Contains(logs.String(), "write after close") {
		t.Errorf("log = %q, want the dropped row reported", logs.String())
	}
}

func TestConcurrentWritesThenCloseLoseNothing(t *testing.T) {
	const writers, perWriter = 50, 200
	sink := &fakeSink{}
	w := New[int](sink, Config{MaxBatch: 64, FlushInterval: time.Millisecond, QueueSize: 128})

	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				w.Write(g*perWriter + i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(testContext(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}

	rows := sink.rows()
	if len(rows) != writers*perWriter {
		t.Errorf("%d rows persisted, want %d", len(rows), writers*perWriter)
	}
	seen := make(map[int]bool, len(rows))
	last := make(map[int]int) // writer -> last row seen from it
	for _, r := range rows {
		if seen[r] {
			t.Fatalf("row %d persisted twice", r)
		}
		seen[r] = true
		// One goroutine's rows keep their order through the queue.
		if prev, ok := last[r/perWriter]; ok && r < prev {
			t.Fatalf("row %d persisted after %d from the same writer", r, prev)
		}
		last[r/perWriter] = r
	}
	if got, want := w.Stats(), (Stats{Written: writers * perWriter}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

func TestTransientFailureIsRetriedAndWrittenOnce(t *testing.T) {
	sink := &fakeSink{failFirst: 2}
	w := New[int](sink, Config{FlushInterval: never})
	closeWriter(t, w)

	for i := range 5 {
		w.Write(i)
	}
	if err := w.Flush(testContext(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got, want := sink.rows(), sequence(5); !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if got, want := sink.callCount(), 3; got != want {
		t.Errorf("sink called %d times, want %d", got, want)
	}
	if got, want := w.Stats(), (Stats{Written: 5}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

func TestPermanentFailureIsCountedAndWriterGoesOn(t *testing.T) {
	const poison = -1
	var logs bytes.Buffer
	sink := &fakeSink{rejects: func(rows []int) bool { return slices.Contains(rows, poison) }}
	w := New[int](sink, Config{
		FlushInterval: never,
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
	})
	closeWriter(t, w)

	w.Write(poison)
	if err := w.Flush(testContext(t)); !errors.Is(err, errPoison) {
		t.Fatalf("Flush after poisoned batch = %v, want errPoison", err)
	}
	if got, want := sink.callCount(), 1+len(retryDelays()); got != want {
		t.Errorf("sink called %d times, want %d", got, want)
	}
	if got, want := w.Stats(), (Stats{Failed: 1}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if !strings.Contains(logs.String(), "rows=1") {
		t.Errorf("log = %q, want the failed row count", logs.String())
	}

	// The failure was reported once; later rows go through.
	w.Write(1)
	w.Write(2)
	if err := w.Flush(testContext(t)); err != nil {
		t.Fatalf("Flush after recovery: %v", err)
	}
	if got, want := sink.rows(), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if got, want := w.Stats(), (Stats{Written: 2, Failed: 1}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

// A row the database refuses loses only itself: the rows batched beside it
// (other calls, other users) are written once the batch is split.
func TestPoisonedRowLosesOnlyItself(t *testing.T) {
	const poison = -1
	var logs bytes.Buffer
	sink := &fakeSink{rejects: func(rows []int) bool { return slices.Contains(rows, poison) }}
	w := New[int](sink, Config{
		FlushInterval: never,
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
	})
	closeWriter(t, w)

	for i := 1; i <= 10; i++ {
		w.Write(i)
		if i == 4 || i == 9 {
			w.Write(poison)
		}
	}
	if err := w.Flush(testContext(t)); !errors.Is(err, errPoison) {
		t.Fatalf("Flush after a poisoned batch = %v, want errPoison", err)
	}
	got := sink.rows()
	slices.Sort(got)
	if want := sequence(11)[1:]; !slices.Equal(got, want) {
		t.Errorf("rows written = %v, want %v (all but the poisoned ones)", got, want)
	}
	if got, want := w.Stats(), (Stats{Written: 10, Failed: 2}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if !strings.Contains(logs.String(), "rows=2 of=12") {
		t.Errorf("log = %q, want the lost row count", logs.String())
	}
}

func TestFullQueueBlocksWriteUntilRoom(t *testing.T) {
	sink := &fakeSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(sink.release) }) }
	w := New[int](sink, Config{MaxBatch: 1, FlushInterval: never, QueueSize: 2})
	closeWriter(t, w)
	t.Cleanup(release) // runs before closeWriter's Close, so a failed test cannot hang

	w.Write(0)
	select {
	case <-sink.entered: // row 0 has left the queue and holds up the sink
	case <-time.After(2 * time.Second):
		t.Fatal("sink not called within 2s")
	}
	w.Write(1)
	w.Write(2) // the queue is now full

	returned := make(chan struct{})
	go func() {
		w.Write(3)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatalf("Write returned with a full queue; Stats = %+v", w.Stats())
	case <-time.After(100 * time.Millisecond):
	}

	release()
	select {
	case <-returned:
	case <-time.After(2 * time.Second):
		t.Fatal("Write still blocked 2s after the sink was released")
	}
	if err := w.Flush(testContext(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got, want := sink.rows(), sequence(4); !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if got := w.Stats(); got.Dropped != 0 {
		t.Errorf("Stats = %+v, want nothing dropped", got)
	}
}
