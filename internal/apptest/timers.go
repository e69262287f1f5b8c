package apptest

import (
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/relay"
)

// Timers is a fake time.AfterFunc on a Clock, for the relay's idle timers
// of streams and answer bodies (UseTimers): a timer falls due once the clock reaches its
// deadline, and runs its function only when the test calls FireDue, so a
// test decides when a time-out happens instead of sleeping for one. It is
// safe for concurrent use.
type Timers struct {
	clock *Clock

	mu      sync.Mutex
	timers  []*FakeTimer
	arms    int           // AfterFunc and Reset calls so far
	changed chan struct{} // closed and replaced on every arm
}

// FakeTimer is one timer of Timers; it implements relay.Timer.
type FakeTimer struct {
	ts    *Timers
	f     func()
	at    time.Time
	armed bool
}

// NewTimers makes timers whose deadlines are read on clock.
func NewTimers(clock *Clock) *Timers {
	return &Timers{clock: clock, changed: make(chan struct{})}
}

// UseTimers makes ts the stream idle timers of streams begun from now on.
func (e *Env) UseTimers(ts *Timers) {
	e.App.SetAfterFunc(func(d time.Duration, f func()) relay.Timer { return ts.AfterFunc(d, f) })
}

// AfterFunc arms a timer that runs f once d has passed on the clock and
// FireDue is called.
func (ts *Timers) AfterFunc(d time.Duration, f func()) *FakeTimer {
	t := &FakeTimer{ts: ts, f: f}
	ts.mu.Lock()
	ts.timers = append(ts.timers, t)
	ts.mu.Unlock()
	t.Reset(d)
	return t
}

// Reset arms t to fall due d from the clock's now; it reports whether t
// was armed.
func (t *FakeTimer) Reset(d time.Duration) bool {
	ts := t.ts
	at := ts.clock.Now().Add(d)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	was := t.armed
	t.at, t.armed = at, true
	ts.arms++
	close(ts.changed)
	ts.changed = make(chan struct{})
	return was
}

// Stop disarms t; it reports whether t was armed.
func (t *FakeTimer) Stop() bool {
	t.ts.mu.Lock()
	defer t.ts.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

// FireDue runs, one after the other, the functions of the armed timers
// whose deadline the clock has reached, disarming them, and returns how
// many ran.
func (ts *Timers) FireDue() int {
	now := ts.clock.Now()
	ts.mu.Lock()
	var due []func()
	for _, t := range ts.timers {
		if t.armed && !now.Before(t.at) {
			t.armed = false
			due = append(due, t.f)
		}
	}
	ts.mu.Unlock()
	for _, f := range due { // unlocked: f may Reset its own timer
		f()
	}
	return len(due)
}

// Armed is how many timers are armed.
func (ts *Timers) Armed() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, t := range ts.timers {
		if t.armed {
			n++
		}
	}
	return n
}

// Arms is how many times timers were armed (AfterFunc or Reset).
func (ts *Timers) Arms() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.arms
}

// WaitArms waits until timers were armed (AfterFunc or Reset) n times in
// all: a stream loop re-arms its idle timer before each upstream read, so
// this is how a test knows the loop is waiting again. It fails t after a
// minute, a bound no loaded machine reaches.
func (ts *Timers) WaitArms(t testing.TB, n int) {
	t.Helper()
	limit := time.After(time.Minute)
	for {
		ts.mu.Lock()
		arms, changed := ts.arms, ts.changed
		ts.mu.Unlock()
		if arms >= n {
			return
		}
		select {
		case <-changed:
		case <-limit:
			t.Fatalf("timers armed %d times, want %d", arms, n)
		}
	}
}
