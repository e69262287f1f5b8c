package relay

import (
	"errors"
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

// readFunc is an io.ReadCloser whose reads run f.
type readFunc func(p []byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
func (readFunc) Close() error                 { return nil }

// The body idle timer cuts only a read that waits on the upstream: a timer
// falling due between reads (the relay writing to a slow client) cuts
// nothing, and every read re-arms it.
func TestBodyIdleCutsOnlyAWaitingRead(t *testing.T) {
	m := &manualTimer{}
	cancelled := false
	var fireDuringRead bool
	b := &idleBody{after: time.Minute, cancel: func() { cancelled = true },
		start: func(_ time.Duration, f func()) Timer { m.f = f; m.Reset(0); return m }}
	b.ReadCloser = readFunc(func(p []byte) (int, error) {
		if fireDuringRead {
			m.fire() // the upstream sent nothing within the bound
			return 0, errors.New("read on a cancelled request")
		}
		return copy(p, "data"), nil
	})
	p := make([]byte, 8)
	if n, err := b.Read(p); n != 4 || err != nil || m.armed || m.arms != 1 {
		t.Fatalf("read %d, %v; timer armed %v after %d arms, want stopped after 1", n, err, m.armed, m.arms)
	}
	m.f() // falls due between reads
	if cancelled {
		t.Fatal("the body idle timer cut the upstream between reads")
	}
	fireDuringRead = true
	_, err := b.Read(p)
	var idle *bodyIdleError
	if !cancelled || !errors.As(err, &idle) || m.arms != 2 {
		t.Fatalf("a read the timer cut: cancelled %v, err %v, %d arms", cancelled, err, m.arms)
	}
	if _, err := b.Read(p); !errors.As(err, &idle) {
		t.Fatalf("a read after the cut: %v, want the idle error again", err)
	}
	b.off, fireDuringRead = true, false // a stream loop took the body over
	if n, err := b.Read(p); n != 4 || err != nil || m.arms != 2 {
		t.Fatalf("a read with the bound off: %d, %v, %d arms", n, err, m.arms)
	}
}
