package logwriter

import (
	"context"
	"fmt"
	"time"
)

// retryDelays returns the pauses between attempts of one batch. They are
// short and few because a batch that keeps failing is probably poisoned,
// and the rows queued behind it must not wait for ever.
func retryDelays() []time.Duration {
	return []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, time.Second}
}

// run is the one goroutine that talks to the sink. It writes when MaxBatch
// rows are pending or FlushInterval has passed since the first pending row,
// and exits, after writing what is left, when Close closes the queue.
func (w *Writer[T]) run() {
	defer close(w.done)

	// Stopped until a row is pending. Since Go 1.23 Stop and Reset leave no
	// stale tick in timer.C, so no draining is needed.
	timer := time.NewTimer(w.cfg.FlushInterval)
	timer.Stop()
	defer timer.Stop()

	var (
		pending  []T
		firstErr error // first failure since the last flush marker
	)
	writePending := func() {
		if len(pending) == 0 {
			return
		}
		timer.Stop()
		if err := w.insert(pending); err != nil && firstErr == nil {
			firstErr = err
		}
		// A fresh slice each time: the sink may keep the one it was given.
		pending = nil
	}

	for {
		select {
		case it, ok := <-w.queue:
			if !ok {
				writePending()
				w.closeErr = firstErr
				return
			}
			if it.flushed != nil {
				writePending()
				it.flushed <- firstErr
				firstErr = nil
				continue
			}
			if pending == nil {
				pending = make([]T, 0, w.cfg.MaxBatch)
				timer.Reset(w.cfg.FlushInterval)
			}
			pending = append(pending, it.row)
			if len(pending) >= w.cfg.MaxBatch {
				writePending()
			}
		case <-timer.C:
			writePending()
		}
	}
}

// insert hands rows to the sink, retrying with backoff. When every attempt
// fails the rows are counted and logged as failed (by count only: their
// content may be sensitive) so that one bad batch cannot stall the queue.
func (w *Writer[T]) insert(rows []T) error {
	// Background, not a caller's context: the rows were accepted, and a
	// caller giving up on Flush or Close must not abort their insertion.
	ctx := context.Background()
	start := time.Now()
	err := w.sink.InsertBatch(ctx, rows)
	if f := w.onCommit.Load(); f != nil {
		(*f)(time.Since(start))
	}
	attempts := 1
	for _, delay := range retryDelays() {
		if err == nil {
			break
		}
		time.Sleep(delay)
		err = w.sink.InsertBatch(ctx, rows)
		attempts++
	}
	if err == nil {
		w.written.Add(uint64(len(rows)))
		return nil
	}
	lost := len(rows)
	if len(rows) > 1 {
		lost = w.isolate(ctx, rows)
		if lost == 0 {
			return nil // the retries met a passing failure
		}
	}
	w.failed.Add(uint64(lost))
	w.logger.Error("logwriter: batch failed, rows lost",
		"rows", lost, "of", len(rows), "attempts", attempts, "err", err)
	return fmt.Errorf("insert batch: %d of %d rows lost: %w", lost, len(rows), err)
}

// isolate writes a batch that kept failing in halves, once each, down to
// single rows, and returns how many rows could not be written. A row the
// database refuses (one text it cannot store, say) so loses only itself:
// the rows batched beside it belong to other calls and other users. A
// database that is down fails every part quickly.
func (w *Writer[T]) isolate(ctx context.Context, rows []T) (lost int) {
	mid := len(rows) / 2
	for _, part := range [][]T{rows[:mid], rows[mid:]} {
		if err := w.sink.InsertBatch(ctx, part); err == nil {
			w.written.Add(uint64(len(part)))
			continue
		}
		if len(part) == 1 {
			lost++
			continue
		}
		lost += w.isolate(ctx, part)
	}
	return lost
}
