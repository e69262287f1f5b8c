package relay

import (
	"testing"
	"time"
)

// manualTimer is a Timer a test fires by hand.
type manualTimer struct {
	f     func()
	armed bool
	arms  int
}

func (m *manualTimer) Reset(time.Duration) bool {
	was := m.armed
	m.armed = true
	m.arms++
	return was
}

func (m *manualTimer) Stop() bool {
	was := m.armed
	m.armed = false
	return was
}

func (m *manualTimer) fire() {
	m.armed = false
	m.f()
}

func newManualIdle() (*streamIdle, *manualTimer, *bool) {
	cancelled := new(bool)
	m := &manualTimer{armed: true, arms: 1}
	w := &streamIdle{after: time.Minute, timer: m}
	m.f = w.onTimeout(func() { *cancelled = true })
	return w, m, cancelled
}

// Time the loop spends writing an event to the client (a client that
// stops reading blocks that write) is not the upstream's silence: a timer
// falling due then cuts nothing, and is re-armed when the loop reads again.
func TestStreamIdleSparesTheTimeSpentWritingToTheClient(t *testing.T) {
	w, m, cancelled := newManualIdle()
	w.event() // the loop read an event and now writes it
	m.fire()
	if *cancelled || w.timedOut() {
		t.Fatal("the idle timer cut a stream while the loop was writing to its client")
	}
	w.reading()
	if !m.armed || m.arms != 2 {
		t.Fatalf("after the write: armed %v, %d arms; want re-armed", m.armed, m.arms)
	}
	w.reading() // no event since: nothing to re-arm
	if m.arms != 2 {
		t.Fatalf("reading without an event re-armed the timer (%d arms)", m.arms)
	}
	m.fire()
	if !*cancelled || !w.timedOut() {
		t.Fatal("the idle timer fired during a read and did not cut the upstream")
	}
}
