package app

import (
	"log/slog"
	"sync"
	"time"
)

// stopReport is what a stop did, logged once at its end
// ("shutdown complete") and kept for tests (LastStop).
type stopReport struct {
	mu sync.Mutex
	StopReport
	begun         bool
	startedBefore int64 // calls begun before the stop
	settledBefore int64 // settlements committed before the stop
	logsBefore    uint64
}

// StopReport sums up a stop.
type StopReport struct {
	// InFlight is the calls being served when the stop began.
	InFlight int64
	// Drained is the calls that finished on their own during the stop
	// (those in flight and those accepted during SHUTDOWN_DELAY); Cut is
	// the calls ended by it (SHUTDOWN_TIMEOUT ran out), each billed for
	// what its upstream produced.
	Drained, Cut int64
	// Settlements and Logs are the settlements and batched log rows
	// committed from the start of the stop until the database closed.
	Settlements int64
	Logs        uint64
	// Delay is the time served with readiness 503 (SHUTDOWN_DELAY); Drain
	// the wait for calls; Flush the final commit of settlements and logs;
	// Total all of it.
	Delay, Drain, Flush, Total time.Duration
	start                      time.Time
}

// LastStop is the report of this process's stop, complete after Close.
func (a *App) LastStop() StopReport {
	a.stop.mu.Lock()
	defer a.stop.mu.Unlock()
	return a.stop.StopReport
}

// beginStop turns readiness off and notes where the counters stood; the
// first call wins (ServeListener, or Close when the app was served
// elsewhere).
func (a *App) beginStop() {
	a.draining.Store(true)
	r := &a.stop
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.begun {
		return
	}
	r.begun = true
	r.start = time.Now()
	r.InFlight, r.startedBefore = a.relay.Calls()
	r.settledBefore = a.ledger.Settled()
	r.logsBefore = a.logs.Stats().Written + a.errLogs.Stats().Written
}

// cutting records the calls about to be ended by EndStreams. Close ends
// again what Serve's cut left running (no call starts in between), so the
// larger count is the number cut.
func (a *App) cutting() {
	inflight, _ := a.relay.Calls()
	a.stop.mu.Lock()
	a.stop.Cut = max(a.stop.Cut, inflight)
	a.stop.mu.Unlock()
}

// endStop completes the report after the last flush and logs it.
func (a *App) endStop(flushStart time.Time) {
	r := &a.stop
	r.mu.Lock()
	_, started := a.relay.Calls()
	r.Drained = max(started-r.startedBefore+r.InFlight-r.Cut, 0)
	r.Settlements = a.ledger.Settled() - r.settledBefore
	r.Logs = a.logs.Stats().Written + a.errLogs.Stats().Written - r.logsBefore
	r.Flush = time.Since(flushStart)
	r.Total = time.Since(r.start)
	rep := r.StopReport
	r.mu.Unlock()
	a.log.Info("shutdown complete", slog.Int64("calls_in_flight", rep.InFlight), slog.Int64("calls_drained", rep.Drained),
		slog.Int64("calls_cut", rep.Cut), slog.Int64("settlements_flushed", rep.Settlements), slog.Uint64("logs_flushed", rep.Logs),
		slog.Duration("delay", rep.Delay), slog.Duration("drain", rep.Drain), slog.Duration("flush", rep.Flush), slog.Duration("total", rep.Total))
}
