// Package breaker owns the circuit-breaker rules of the relay's channels:
// per (channel, model), a sliding window of call outcomes that opens the
// breaker after too high an error rate or too many consecutive failures,
// a cool-down that grows on every failed probe, and one probe at a time
// before it closes again (docs/decisions/circuit-breakers.md).
//
// A Breaker is in memory, per node. Its hot path is cheap: a closed
// breaker is checked with one atomic load, and an outcome is recorded
// under the breaker's own mutex (never a global one) without allocating.
package breaker

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// State is where a breaker stands.
type State int32

// The states. A closed breaker lets calls through; an open one skips the
// channel for the model until its probe is due; a probing one skips it
// while the single probe is in flight.
const (
	Closed State = iota
	Open
	Probing
)

// String is the state's name in the admin view.
func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case Probing:
		return "half_open"
	}
	return "closed"
}

// Config is the breaker's thresholds (the ChannelBreaker* options). The
// zero Config is "off".
type Config struct {
	Enabled bool
	// Window is the span of the sliding window, cut into Buckets slots.
	Window time.Duration
	// MinCalls is the least number of counted calls in the window before
	// the error rate may open the breaker.
	MinCalls int64
	// ErrorRatePercent opens the breaker when failures × 100 ≥ rate ×
	// calls in the window (with at least MinCalls calls); 0 turns the rule
	// off.
	ErrorRatePercent int64
	// Consecutive opens the breaker after that many failures in a row,
	// whatever the window holds; 0 turns the rule off. Values below 2 are
	// treated as 2: one error never opens a breaker.
	Consecutive int64
	// CoolDown is how long the breaker stays open before its first probe;
	// every failed probe doubles it, up to MaxCoolDown.
	CoolDown    time.Duration
	MaxCoolDown time.Duration
}

// Buckets is the number of slots of the window: the window slides by
// Window/Buckets.
const Buckets = 10

// MaxEvents is how many of the last failures a breaker keeps for the
// admin view.
const MaxEvents = 5

// Event is one failure as the admin sees it.
type Event struct {
	Time time.Time
	// Status is the upstream's HTTP status; 0 when it did not answer (a
	// connection error, a timeout).
	Status int
	// Message is the upstream's answer or the transport error, keys
	// already masked, at most MaxMessageBytes.
	Message string
	// Probe is true when the failure was the breaker's own probe.
	Probe bool
}

// MaxMessageBytes bounds an Event's message (cut at a character by the
// caller's cleaning; Record cuts longer ones).
const MaxMessageBytes = 512

type bucket struct {
	slot       int64 // which slot of time the counts belong to
	ok, failed int64
	// callers and failers are the slot's callers and failing callers, one
	// bit per caller (callerBit): their popcounts are a lower bound of the
	// distinct callers, kept without allocating.
	callers, failers uint64
}

// callerBit is caller's bit in a bucket's caller sets. Two callers may
// share a bit; that only ever makes them count as one, so a collision can
// delay an opening, never cause one.
func callerBit(caller int64) uint64 {
	h := uint64(caller) * 0x9E3779B97F4A7C15 // Fibonacci hashing: ids 1, 2, 3… spread over the bits
	return 1 << (h >> 58)
}

// MaxCallers is how many callers with recent failures a breaker follows
// for their own cool-down; when more fail at once the one whose last
// failure is oldest is forgotten.
const MaxCallers = 16

// callerState is one caller's run of failures on the breaker's (channel,
// model) and its own cool-down.
type callerState struct {
	id       int64
	fails    int64     // failures in a row
	last     time.Time // the latest failure
	until    time.Time // cooled down until
	coolDown time.Duration
}

// Breaker is the breaker of one (channel, model). Its zero value is a
// closed breaker.
type Breaker struct {
	state atomic.Int32 // a State, read without the lock on the hot path
	// dueAt is probeAt in Unix nanoseconds, so calls checking an open
	// breaker do not take its lock either.
	dueAt atomic.Int64

	// nCallers is how many entries callers holds, so calls check a
	// caller's cool-down without the lock while nobody has one.
	nCallers atomic.Int32

	mu          sync.Mutex
	width       time.Duration // the slot width the buckets were filled with
	buckets     [Buckets]bucket
	consecutive int64
	// runCaller is the caller of the consecutive run's first failure;
	// runMixed: another caller failed in the run since.
	runCaller   int64
	runMixed    bool
	callers     [MaxCallers]callerState
	openedAt    time.Time
	probeAt     time.Time     // when open: the first moment a probe may be sent
	coolDown    time.Duration // the current one; grows with failed probes
	failedProbe int64         // failed probes since the breaker last closed
	trips       int64         // how many times it opened, since it exists
	events      [MaxEvents]Event
	nEvents     int // events recorded, for the ring's order
}

// Closed reports, without locking, whether calls go through: the hot
// path's check before anything else.
func (b *Breaker) Closed() bool { return State(b.state.Load()) == Closed }

// Allow reports whether a call may use the channel for the model now. When
// an open breaker's cool-down is over, exactly one caller (the one whose
// compare-and-swap wins) gets probe = true and must send the probe and
// report it with ProbeDone; every caller, that one included, is refused
// until the probe closes the breaker. A disabled config allows everything.
func (b *Breaker) Allow(now time.Time, cfg *Config) (allow, probe bool) {
	if !cfg.Enabled {
		return true, false
	}
	switch State(b.state.Load()) {
	case Closed:
		return true, false
	case Probing:
		return false, false
	}
	due := now.UnixNano() >= b.dueAt.Load()
	if due && b.state.CompareAndSwap(int32(Open), int32(Probing)) {
		return false, true
	}
	return false, false
}

// Success records a call the channel answered for caller (a user). It
// ends the caller's own run of failures and cool-down. Only a closed
// breaker counts calls: outcomes of calls that started before it opened
// are late news, and an open breaker's verdict is its probe's.
func (b *Breaker) Success(now time.Time, cfg *Config, caller int64) {
	if !cfg.Enabled || (!b.Closed() && b.nCallers.Load() == 0) {
		return
	}
	b.mu.Lock()
	if b.nCallers.Load() > 0 {
		b.forgetCaller(caller)
	}
	if State(b.state.Load()) == Closed {
		bk := b.bucketAt(now, cfg)
		bk.ok++
		bk.callers |= callerBit(caller)
		b.consecutive = 0
	}
	b.mu.Unlock()
}

// Outcome is what a failure changed.
type Outcome struct {
	// Opened: the failure opened the breaker for every caller.
	Opened bool
	// CallerCooled: the failure started a cool-down of its caller alone
	// (CallerCooling).
	CallerCooled bool
}

// Failure records a call the channel failed for caller (docs: what counts
// as a failure) and its event. One caller's failures never open the
// breaker alone (docs/decisions/circuit-breakers.md, One caller): they
// cool that caller down on the channel once they reach the caller's
// threshold, and while the caller cools down its failures are not counted
// for the channel.
func (b *Breaker) Failure(now time.Time, cfg *Config, caller int64, ev Event) (out Outcome) {
	if !cfg.Enabled {
		return out
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remember(ev)
	if State(b.state.Load()) != Closed {
		return out
	}
	cs := b.callerEntry(now, cfg, caller)
	cs.fails++
	cs.last = now
	if now.Before(cs.until) {
		return out // the caller's verdict is its own cool-down
	}
	if cs.fails >= callerLimit(cfg) {
		if cs.coolDown == 0 {
			cs.coolDown = cfg.CoolDown
		} else {
			cs.coolDown = min(2*cs.coolDown, max(cfg.MaxCoolDown, cfg.CoolDown))
		}
		cs.until = now.Add(cs.coolDown)
		out.CallerCooled = true
	}
	bk := b.bucketAt(now, cfg)
	bk.failed++
	bk.callers |= callerBit(caller)
	bk.failers |= callerBit(caller)
	b.consecutive++
	if b.consecutive == 1 {
		b.runCaller, b.runMixed = caller, false
	} else if caller != b.runCaller {
		b.runMixed = true
	}
	if out.CallerCooled && !b.runMixed {
		// The run was this caller's alone, and its cool-down is the
		// verdict on it: another caller's next failure starts a new run.
		b.consecutive = 0
	}
	if !b.shouldOpen(now, cfg) {
		return out
	}
	b.open(now, cfg.CoolDown)
	b.failedProbe = 0
	out.Opened = true
	return out
}

// callerLimit is how many failures in a row cool one caller down: the
// consecutive rule's threshold, or the error rate's least number of calls
// when that rule is off.
func callerLimit(cfg *Config) int64 {
	if cfg.Consecutive > 0 {
		return max(cfg.Consecutive, 2)
	}
	return max(cfg.MinCalls, 2)
}

// shouldOpen reports whether the counts now open the breaker: the
// consecutive failures came from more than one caller, or the error rate
// is reached both over the calls and over the callers of the window (at
// least two failing callers, and failing callers × 100 ≥ rate × callers).
func (b *Breaker) shouldOpen(now time.Time, cfg *Config) bool {
	if cfg.Consecutive > 0 && b.consecutive >= max(cfg.Consecutive, 2) && b.runMixed {
		return true
	}
	if cfg.ErrorRatePercent <= 0 {
		return false
	}
	c := b.counts(now, cfg)
	return c.calls >= max(cfg.MinCalls, 2) && c.failed*100 >= cfg.ErrorRatePercent*c.calls &&
		c.failers >= 2 && c.failers*100 >= cfg.ErrorRatePercent*c.callers
}

// CallerCooling reports whether caller's own failures cool it down on
// this (channel, model) at now: its calls go to other channels first.
// Without any caller followed it takes no lock.
func (b *Breaker) CallerCooling(now time.Time, caller int64) bool {
	if b.nCallers.Load() == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.callers {
		if cs := &b.callers[i]; cs.id == caller && cs.id != 0 {
			return now.Before(cs.until)
		}
	}
	return false
}

// callerEntry is caller's entry, made when missing: in a free slot, one
// whose caller is neither cooling down nor failed within the window, or
// else the one whose last failure is oldest. b.mu is held.
func (b *Breaker) callerEntry(now time.Time, cfg *Config, caller int64) *callerState {
	var free, oldest *callerState
	for i := range b.callers {
		cs := &b.callers[i]
		switch {
		case cs.id == caller && cs.id != 0:
			if !now.Before(cs.until) && now.Sub(cs.last) > cfg.Window {
				*cs = callerState{id: caller} // an old run: start again
			}
			return cs
		case cs.id == 0 || (!now.Before(cs.until) && now.Sub(cs.last) > cfg.Window):
			if free == nil {
				free = cs
			}
		case oldest == nil || cs.last.Before(oldest.last):
			oldest = cs
		}
	}
	if free == nil {
		free = oldest
	}
	if free.id == 0 {
		b.nCallers.Add(1)
	}
	*free = callerState{id: caller}
	return free
}

// forgetCaller drops caller's entry (a success ends its run and
// cool-down). b.mu is held.
func (b *Breaker) forgetCaller(caller int64) {
	for i := range b.callers {
		if cs := &b.callers[i]; cs.id == caller && cs.id != 0 {
			*cs = callerState{}
			b.nCallers.Add(-1)
			return
		}
	}
}

// ProbeDone reports the probe's outcome: success closes the breaker with an
// empty window; failure opens it again for twice the last cool-down (at
// most MaxCoolDown) and records the event.
func (b *Breaker) ProbeDone(now time.Time, cfg *Config, ok bool, ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if State(b.state.Load()) != Probing {
		return
	}
	if ok {
		b.buckets = [Buckets]bucket{}
		b.consecutive, b.failedProbe, b.coolDown = 0, 0, 0
		b.probeAt, b.openedAt = time.Time{}, time.Time{}
		b.state.Store(int32(Closed))
		return
	}
	ev.Probe = true
	b.remember(ev)
	b.failedProbe++
	b.open(now, NextCoolDown(cfg.CoolDown, cfg.MaxCoolDown, b.failedProbe))
}

// NextCoolDown is the cool-down after failed failed probes: base doubled
// that many times, at most limit (and never below base).
func NextCoolDown(base, limit time.Duration, failed int64) time.Duration {
	d := base
	for range min(failed, 62) {
		if d >= limit || d > limit/2 {
			return max(limit, base)
		}
		d *= 2
	}
	return d
}

// open moves the breaker to Open for coolDown from now; b.mu is held.
func (b *Breaker) open(now time.Time, coolDown time.Duration) {
	if State(b.state.Load()) == Closed {
		b.openedAt = now
		b.trips++
	}
	b.coolDown = coolDown
	b.probeAt = now.Add(coolDown)
	b.dueAt.Store(b.probeAt.UnixNano()) // before the state: a call seeing Open sees this due time
	b.state.Store(int32(Open))
}

// Reset closes the breaker at once (an admin's successful test).
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buckets = [Buckets]bucket{}
	b.consecutive, b.failedProbe, b.coolDown = 0, 0, 0
	b.probeAt, b.openedAt = time.Time{}, time.Time{}
	b.state.Store(int32(Closed))
}

// bucketAt is the bucket of now's slot, emptied if it held an older slot;
// b.mu is held.
func (b *Breaker) bucketAt(now time.Time, cfg *Config) *bucket {
	width := slotWidth(cfg)
	if width != b.width { // the window option changed: the old slots mean nothing
		b.buckets = [Buckets]bucket{}
		b.width = width
	}
	slot := now.UnixNano() / int64(width)
	bk := &b.buckets[uint64(slot)%Buckets]
	if bk.slot != slot {
		*bk = bucket{slot: slot}
	}
	return bk
}

// windowCounts are the window's calls and failures, and how many callers
// made them and failed (lower bounds, callerBit).
type windowCounts struct {
	calls, failed    int64
	callers, failers int64
}

// counts sums the slots inside the window ending now; b.mu is held.
func (b *Breaker) counts(now time.Time, cfg *Config) (c windowCounts) {
	width := slotWidth(cfg)
	if width != b.width {
		return c
	}
	cur := now.UnixNano() / int64(width)
	var callers, failers uint64
	for _, bk := range b.buckets {
		if bk.slot > cur-Buckets && bk.slot <= cur {
			c.calls += bk.ok + bk.failed
			c.failed += bk.failed
			callers |= bk.callers
			failers |= bk.failers
		}
	}
	c.callers, c.failers = int64(bits.OnesCount64(callers)), int64(bits.OnesCount64(failers))
	return c
}

func slotWidth(cfg *Config) time.Duration {
	return max(cfg.Window/Buckets, time.Millisecond)
}

// remember keeps ev among the last MaxEvents; b.mu is held.
func (b *Breaker) remember(ev Event) {
	if len(ev.Message) > MaxMessageBytes {
		ev.Message = ev.Message[:MaxMessageBytes]
	}
	b.events[b.nEvents%MaxEvents] = ev
	b.nEvents++
}

// Status is a breaker as the admin sees it.
type Status struct {
	State State
	// Calls and Failures are the counts of the window ending now (0 while
	// not closed: the window restarts when the breaker closes).
	Calls, Failures int64
	Consecutive     int64
	// OpenedAt is when it opened (zero when closed); ProbeAt when its
	// next probe may be sent (zero when closed).
	OpenedAt, ProbeAt time.Time
	CoolDown          time.Duration
	FailedProbes      int64
	Trips             int64
	// CoolingCallers is how many callers cool down on the channel for the
	// model because of their own failures.
	CoolingCallers int64
	// LastErrors are the latest failures, newest first.
	LastErrors []Event
}

// Status reads the breaker's state at now.
func (b *Breaker) Status(now time.Time, cfg *Config) Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Status{State: State(b.state.Load()), Consecutive: b.consecutive, OpenedAt: b.openedAt,
		ProbeAt: b.probeAt, CoolDown: b.coolDown, FailedProbes: b.failedProbe, Trips: b.trips}
	if s.State == Closed {
		c := b.counts(now, cfg)
		s.Calls, s.Failures = c.calls, c.failed
	}
	for _, cs := range b.callers {
		if cs.id != 0 && now.Before(cs.until) {
			s.CoolingCallers++
		}
	}
	n := min(b.nEvents, MaxEvents)
	s.LastErrors = make([]Event, 0, n)
	for i := range n {
		s.LastErrors = append(s.LastErrors, b.events[(b.nEvents-1-i)%MaxEvents])
	}
	return s
}
