package propagation

import (
	"sync"
	"time"
)

// tracker knows up to which config version this node has applied every
// change: applied is the highest version V such that every change up to V
// was applied here; versions heard beyond a hole wait in pending. A hole
// that stays (a message lost with a connection, a node that died between
// its commit and its publish) is closed by a full reload.
type tracker struct {
	mu      sync.Mutex
	applied int64
	pending map[int64]bool
	// missing is set when a change was heard but could not be applied:
	// the version it carried is a hole too.
	missing  bool
	gapSince time.Time // when the oldest open hole appeared; zero: none
}

func newTracker(applied int64) *tracker {
	return &tracker{applied: applied, pending: map[int64]bool{}}
}

// observe records that the change of version v was applied.
func (t *tracker) observe(v int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v <= t.applied {
		return
	}
	t.pending[v] = true
	t.advance(now)
}

// failed records a change heard but not applied: a full reload must
// follow, as for a hole.
func (t *tracker) failed(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.missing = true
	if t.gapSince.IsZero() {
		t.gapSince = now
	}
}

// reloaded records a full reload that read the database at version v or
// later: every change up to v is applied.
func (t *tracker) reloaded(v int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.missing = false
	t.applied = max(t.applied, v)
	for p := range t.pending {
		if p <= v {
			delete(t.pending, p)
		}
	}
	t.gapSince = time.Time{}
	t.advance(now)
}

func (t *tracker) advance(now time.Time) {
	for t.pending[t.applied+1] {
		delete(t.pending, t.applied+1)
		t.applied++
	}
	switch {
	case len(t.pending) == 0 && !t.missing:
		t.gapSince = time.Time{}
	case t.gapSince.IsZero():
		t.gapSince = now
	}
}

// version is the applied version.
func (t *tracker) version() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied
}

// stuck reports whether a hole has been open longer than grace.
func (t *tracker) stuck(now time.Time, grace time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.gapSince.IsZero() && now.Sub(t.gapSince) >= grace
}
