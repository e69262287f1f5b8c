// Package logwriter batches log rows off the request path: callers enqueue,
// one goroutine inserts them in batches, and Close flushes what is left.
//
// It knows nothing about the store; the store supplies a Sink, which keeps
// this package free of import cycles and testable with an in-memory fake.
package logwriter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Flush after Close has been called.
var ErrClosed = errors.New("logwriter: closed")

// Sink persists a batch in one transaction.
//
// InsertBatch is called from a single goroutine. It may keep rows after it
// returns: every batch is a freshly allocated slice.
type Sink[T any] interface {
	InsertBatch(ctx context.Context, rows []T) error
}

// Config tunes a Writer. The zero value is usable: every zero or negative
// field takes its default.
type Config struct {
	MaxBatch      int           // rows per InsertBatch; default 256
	FlushInterval time.Duration // default 100ms: a crash loses at most this much
	QueueSize     int           // rows buffered before Write blocks; default 8192
	Logger        *slog.Logger  // default discards
}

const (
	defaultMaxBatch      = 256
	defaultFlushInterval = 100 * time.Millisecond
	defaultQueueSize     = 8192
)

// Stats counts rows by outcome since New.
type Stats struct {
	Written uint64 // persisted by the sink
	Failed  uint64 // given up on after every retry failed
	Dropped uint64 // passed to Write after Close
	// Shed were refused by TryWrite because the queue was full.
	Shed uint64
}

// item is either a row or, when flushed is non-nil, a flush marker. Markers
// travel through the same channel as rows so that a Flush covers exactly the
// rows enqueued before it.
type item[T any] struct {
	row     T
	flushed chan error
}

// Writer batches rows into a Sink from one background goroutine.
type Writer[T any] struct {
	sink   Sink[T]
	cfg    Config
	queue  chan item[T]
	done   chan struct{} // closed when the background goroutine has exited
	logger *slog.Logger

	// mu guards closed. Write and Flush hold it shared while they send, so
	// Close (holding it exclusively) knows no sender remains when it closes
	// the queue, and a send on a closed channel cannot happen.
	mu        sync.RWMutex
	closed    bool
	closeOnce sync.Once
	closeErr  error // set by the background goroutine before done is closed

	written, failed, dropped, shed atomic.Uint64
	lastShedWarn                   atomic.Int64 // unix nanoseconds of the last "shed" warning
	// onCommit learns how long each batch insert took (metrics).
	onCommit atomic.Pointer[func(time.Duration)]
}

// New starts a Writer that inserts into sink. Call Close to stop it.
func New[T any](sink Sink[T], cfg Config) *Writer[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = defaultMaxBatch
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = defaultFlushInterval
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueSize
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &Writer[T]{
		sink:   sink,
		cfg:    cfg,
		queue:  make(chan item[T], cfg.QueueSize),
		done:   make(chan struct{}),
		logger: logger,
	}
	go w.run()
	return w
}

// Write enqueues row. It never waits for the database, but when the queue
// is full it blocks until there is room: rows are money records, so
// back-pressure on callers is preferred to losing them.
//
// Write after Close is a programming error: the row is logged as dropped
// and counted in Stats.Dropped. A Write racing with Close is either
// persisted by Close or dropped that way; it never panics.
func (w *Writer[T]) Write(row T) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.dropped.Add(1)
		w.logger.Error("logwriter: write after close, row dropped")
		return
	}
	w.queue <- item[T]{row: row}
}

// TryWrite enqueues row unless the queue is full, and never blocks: for
// rows that must not slow their caller down, such as the error logs of
// failing relay calls, where a flood would otherwise hold every call of
// every user behind the database. A refused row is counted in Stats.Shed
// and reported at most once per shedWarnEvery. It reports whether the row
// was queued.
func (w *Writer[T]) TryWrite(row T) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.dropped.Add(1)
		return false
	}
	select {
	case w.queue <- item[T]{row: row}:
		return true
	default:
	}
	n := w.shed.Add(1)
	now := time.Now().UnixNano()
	if last := w.lastShedWarn.Load(); now-last >= int64(shedWarnEvery) && w.lastShedWarn.CompareAndSwap(last, now) {
		w.logger.Warn("logwriter: queue full, rows shed", "shed_total", n)
	}
	return false
}

// shedWarnEvery spaces TryWrite's warnings: a flood must not flood the
// process log as well.
const shedWarnEvery = 10 * time.Second

// Flush waits until every row enqueued before the call has been handed to
// the sink. It returns the first batch failure since the previous Flush,
// ctx's error if ctx ends first, or ErrClosed after Close.
func (w *Writer[T]) Flush(ctx context.Context) error {
	flushed := make(chan error, 1) // buffered: the goroutine never waits for us
	if err := w.enqueueMarker(ctx, flushed); err != nil {
		return err
	}
	select {
	case err := <-flushed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer[T]) enqueueMarker(ctx context.Context, flushed chan error) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	select {
	case w.queue <- item[T]{flushed: flushed}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting rows, persists all queued ones and returns the
// first batch failure since the last Flush, or ctx's error if ctx ends
// first (the remaining rows are still written in the background). It is
// safe to call more than once.
func (w *Writer[T]) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		// Taking the lock waits for Writes blocked on a full queue, which in
		// turn wait for the sink; do it aside so ctx still bounds Close.
		go func() {
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
			close(w.queue)
		}()
	})
	select {
	case <-w.done:
		return w.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the counters so far.
func (w *Writer[T]) Stats() Stats {
	return Stats{
		Written: w.written.Load(),
		Failed:  w.failed.Load(),
		Dropped: w.dropped.Load(),
		Shed:    w.shed.Load(),
	}
}

// OnCommit makes f learn how long each batch's first insert took
// (metrics). f runs on the writer's goroutine: it must be quick.
func (w *Writer[T]) OnCommit(f func(time.Duration)) { w.onCommit.Store(&f) }

// QueueDepth is how many rows wait in the queue.
func (w *Writer[T]) QueueDepth() int { return len(w.queue) }
