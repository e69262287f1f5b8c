package logwriter

import (
	"testing"
	"time"
)

// A full queue refuses TryWrite at once (counted as shed) instead of
// blocking, and what was queued is still written once the sink recovers.
func TestTryWriteShedsWhenFullWithoutBlocking(t *testing.T) {
	sink := &fakeSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := New[int](sink, Config{MaxBatch: 1, QueueSize: 4, FlushInterval: never})
	closeWriter(t, w)

	if !w.TryWrite(0) {
		t.Fatal("TryWrite on an empty queue refused")
	}
	<-sink.entered // the goroutine holds row 0 in a stuck InsertBatch
	for i := 1; i <= 4; i++ {
		if !w.TryWrite(i) {
			t.Fatalf("TryWrite(%d) refused with room in the queue", i)
		}
	}
	start := time.Now()
	for i := 5; i < 1000; i++ {
		if w.TryWrite(i) {
			t.Fatalf("TryWrite(%d) queued beyond the queue's size", i)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("995 refused TryWrites took %v: they must not wait", d)
	}
	close(sink.release)
	if err := w.Flush(testContext(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := len(sink.rows()); got != 5 {
		t.Fatalf("rows written = %d, want the 5 queued", got)
	}
	if st := w.Stats(); st.Shed != 995 || st.Written != 5 {
		t.Fatalf("Stats = %+v, want Shed 995, Written 5", st)
	}
}
