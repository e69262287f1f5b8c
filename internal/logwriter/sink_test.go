package logwriter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

var (
	errTransient = errors.New("database is locked")
	errPoison    = errors.New("constraint failed")
)

// fakeSink records batches in memory. Set its fields before passing it to New.
type fakeSink struct {
	failFirst int              // the first failFirst calls fail with errTransient
	rejects   func([]int) bool // batches it matches fail with errPoison, always
	entered   chan struct{}    // if non-nil, signalled (without waiting) on each call
	release   chan struct{}    // if non-nil, each call waits until it is closed

	mu      sync.Mutex
	calls   int
	batches [][]int
}

func (s *fakeSink) InsertBatch(_ context.Context, rows []int) error {
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	if s.release != nil {
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failFirst {
		return errTransient
	}
	if s.rejects != nil && s.rejects(rows) {
		return errPoison
	}
	s.batches = append(s.batches, slices.Clone(rows))
	return nil
}

// rows returns every persisted row in insertion order.
func (s *fakeSink) rows() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.batches...)
}

func (s *fakeSink) batchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sizes := make([]int, len(s.batches))
	for i, b := range s.batches {
		sizes[i] = len(b)
	}
	return sizes
}

func (s *fakeSink) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// testContext bounds a Flush or Close so a broken writer fails the test
// instead of hanging it.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closeWriter closes w at the end of a test that did not close it itself.
func closeWriter(t *testing.T, w *Writer[int]) {
	t.Helper()
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func sequence(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
