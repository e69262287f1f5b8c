package apptest

import (
	"sync"
	"time"
)

// Clock is a settable time source for code that takes a clock (the login
// throttle, App.SetClock's subscriptions and plan limits), so tests move
// through time instead of sleeping. It is safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

// NewClock is a Clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{start: start, now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Start is the time the clock was made at.
func (c *Clock) Start() time.Time { return c.start }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to d after its start.
func (c *Clock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.start.Add(d)
}
