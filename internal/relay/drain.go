package relay

import (
	"context"
	"sync"
	"time"
)

// upstreamCall is the lifetime of one upstream request. Its context is
// detached from the client's: the client leaving cancels it only until a
// stream starts (follow), after which the stream's drain decides; the
// relay's EndStreams cancels it at any time (its parent, detached).
type upstreamCall struct {
	cancel context.CancelFunc
	follow func() bool // stops cancelling when the client leaves
	// parent is the request context's parent: kept here, it costs the
	// call no allocation.
	parent detached
	// body is the answer's body under its idle bound (boundBody), once
	// the answer came: kept here, it costs the call no allocation.
	body idleBody
}

// upstreamContext starts the context of an attempt's upstream request,
// ending the previous attempt's.
func (c *call) upstreamContext() context.Context {
	c.endUpstream()
	up := &upstreamCall{parent: detached{stopping: c.rl.stopping, values: c.r.Context()}}
	ctx, cancel := context.WithCancel(&up.parent)
	up.cancel, up.follow = cancel, context.AfterFunc(c.r.Context(), cancel)
	c.up = up
	return ctx
}

// detached is the client's request context without its cancellation,
// ended by the relay's stopping (EndStreams) instead: its values are the
// request's, its Done and Err stopping's. A context made from it is a
// child of stopping, registered with it directly, as one made from
// stopping itself would be: no goroutine and no AfterFunc per call.
type detached struct {
	stopping context.Context // context.WithCancel(context.Background()): no values
	values   context.Context
}

func (d *detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d *detached) Done() <-chan struct{}       { return d.stopping.Done() }
func (d *detached) Err() error                  { return d.stopping.Err() }

// Value answers the request's values. stopping holds none of its own:
// what it answers is the key by which context.WithCancel finds the
// cancellable context its parent derives from, so that key finds
// stopping (whose Done this is) and every other key the request's.
func (d *detached) Value(key any) any {
	if v := d.stopping.Value(key); v != nil {
		return v
	}
	return d.values.Value(key)
}

// endUpstream cancels the current upstream request, if any; an answer read
// to its end has already given its connection back.
func (c *call) endUpstream() {
	if c.up == nil {
		return
	}
	c.up.follow()
	c.up.cancel()
	c.up = nil
}

// streamDrain keeps an upstream stream going after its client left, for
// the usage the upstream reports at its end (a reasoning model's hidden
// tokens, often most of the cost), and cancels it when the grace (the
// StreamDrainSeconds option) runs out. The stream loop stops writing once
// left reports true.
type streamDrain struct {
	grace  time.Duration
	cancel context.CancelFunc
	watch  func() bool

	mu    sync.Mutex
	gone  bool
	timer *time.Timer
}

// drainOnLeave detaches the upstream stream from the client: from now on
// the client leaving starts the grace instead of cancelling at once. Call
// end when the stream loop is done.
func (c *call) drainOnLeave() *streamDrain {
	d := &streamDrain{grace: c.rl.Options.Current().StreamDrain, cancel: c.up.cancel}
	if !c.up.follow() {
		d.gone = true // the client left before the stream began: already cancelled
		return d
	}
	d.watch = context.AfterFunc(c.r.Context(), d.leave)
	return d
}

// leave records that the client is gone (its context ended, or a write to
// it failed) and starts the grace.
func (d *streamDrain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return
	}
	d.gone = true
	if d.grace <= 0 {
		d.cancel()
		return
	}
	d.timer = time.AfterFunc(d.grace, d.cancel)
}

// left reports whether the client is gone.
func (d *streamDrain) left() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gone
}

func (d *streamDrain) end() {
	if d.watch != nil {
		d.watch()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

// EndStreams cancels every upstream call in flight, and any started later:
// the last step of a shutdown, once calls had their time to finish. Each
// call then ends its stream and settles for what its upstream produced
// (docs/operations.md).
func (rl *Relay) EndStreams() { rl.endStreams() }

// ending reports whether EndStreams was called.
func (rl *Relay) ending() bool { return rl.stopping.Err() != nil }
