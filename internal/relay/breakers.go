package relay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/channel"
)

// The relay's side of the channel circuit breakers
// (docs/decisions/circuit-breakers.md): which outcomes count, skipping an
// open breaker's channel, and its probe.

// breakerKeys is every (channel, model) the snapshot routes, for Renew.
func breakerKeys(channels map[int64]*upstream) []breaker.Key {
	var keys []breaker.Key
	for id, u := range channels {
		for m := range u.models {
			keys = append(keys, breaker.Key{Channel: id, Model: m})
		}
	}
	return keys
}

// tripped reports whether channel u's breaker for model keeps it out of
// this call. The call whose check finds the cool-down over starts the
// breaker's single probe; that call, too, goes elsewhere.
func (rl *Relay) tripped(u *upstream, model string) bool {
	b := u.breakers[model]
	if b == nil || b.Closed() {
		return false // the hot path: one map read and one atomic load
	}
	cfg := &rl.Options.Current().Breaker
	allow, probe := b.Allow(rl.now(), cfg)
	if probe {
		go rl.probe(u, model, b)
	}
	return !allow
}

// recordOutcome tells channel u's breaker for the call's model how the
// attempt went: its answer a and error err. Failures are the channel's: no answer (connection error,
// timeout), a 5xx (Anthropic's 529 included), a 200 the relay could not
// read, a stream the upstream broke. The request's own 4xx, a 429 (the
// channel's cooldown handles it), a refused key (the channel is disabled
// outright), a client that left and a gateway shutting down count neither
// way.
func (c *call) recordOutcome(u *upstream, a *answer, err error) {
	b := u.breakers[c.meta.model]
	if b == nil {
		return
	}
	cfg := &c.rl.Options.Current().Breaker
	if !cfg.Enabled {
		return
	}
	switch {
	case a.channel == u && a.upstreamBroke == "" && (err == nil || c.wrote()):
		b.Success(c.rl.now(), cfg, c.key.user.ID)
	case a.upstreamBroke != "":
		c.breakerFailure(u, b, cfg, &upstreamFailure{detail: a.upstreamBroke})
	case err != nil:
		// fail is declared here, not for every call: errors.As moves it
		// to the heap.
		var fail *upstreamFailure
		if errors.As(err, &fail) && !fail.neutral && c.r.Context().Err() == nil {
			c.breakerFailure(u, b, cfg, fail)
		}
	}
}

func (c *call) breakerFailure(u *upstream, b *breaker.Breaker, cfg *breaker.Config, fail *upstreamFailure) {
	now := c.rl.now()
	ev := breaker.Event{Time: now, Status: fail.status, Message: channel.CleanLastError(cut(fail.detail, breaker.MaxMessageBytes))}
	if fail.unreadable {
		ev.Status = http.StatusOK // the upstream said 200; the relay could not read it
	}
	out := b.Failure(now, cfg, c.key.user.ID, ev)
	if out.Opened {
		c.rl.Log.Warn("channel breaker opened: the channel is skipped for the model", "channel", u.ID,
			"model", c.meta.model, "cool_down", cfg.CoolDown)
	} else if out.CallerCooled {
		c.rl.Log.Info("channel breaker: one caller's failures cool that caller down on the channel", "channel", u.ID,
			"model", c.meta.model, "user_id", c.key.user.ID)
	}
}

// callerCooling reports whether this call's caller cools down on channel
// u for the model after failures of its own: the channel is then tried
// only when no other one is left (choose), so the caller gets another
// channel or the upstream's own answer, and others keep the channel.
func (c *call) callerCooling(u *upstream) bool {
	b := u.breakers[c.meta.model]
	return b != nil && c.rl.Options.Current().Breaker.Enabled && b.CallerCooling(c.rl.now(), c.key.user.ID)
}

// cut shortens s to at most n bytes (CleanLastError then drops a cut
// character's remains).
func cut(s string, n int) string { return s[:min(len(s), n)] }

// probe sends the breaker's probe: the channel test (a one-token chat
// completion) with the model, in the background. A background call rather
// than a client's: no caller's request is sent to a channel known to fail,
// its outcome is a plain yes or no, and it always ends within
// probeTimeout, so a breaker cannot stay half-open. A 200 in the API's
// format closes the breaker; anything else opens it for a longer
// cool-down, and a key refusal retires the probe's key as a call's would.
func (rl *Relay) probe(u *upstream, model string, b *breaker.Breaker) {
	k, _ := rl.nextKey(u, nil)
	res, body := rl.testUpstream(rl.stopping, u, k.Key, model)
	now := rl.now()
	cfg := &rl.Options.Current().Breaker
	ok := res.OK() && json.Valid(body)
	if ok {
		b.ProbeDone(now, cfg, true, breaker.Event{})
		rl.Log.Info("channel breaker closed: its probe succeeded", "channel", u.ID, "model", model)
		return
	}
	if rl.ending() { // not the channel's fault; the process is going away
		b.ProbeDone(now, cfg, false, breaker.Event{Time: now, Message: "the gateway is shutting down"})
		return
	}
	msg := res.Detail
	if res.OK() {
		msg = "invalid answer: " + scrub(string(body[:min(len(body), 200)]), k.Key)
	}
	b.ProbeDone(now, cfg, false, breaker.Event{Time: now, Status: res.Status, Message: channel.CleanLastError(cut(msg, breaker.MaxMessageBytes))})
	rl.Log.Warn("channel breaker probe failed: the channel stays skipped for the model", "channel", u.ID, "model", model,
		"status", res.Status, "next_probe", b.Status(now, cfg).ProbeAt)
	if res.Status != 0 && keyRefused(u.dialect, res.Status, body) {
		rl.retireKey(context.WithoutCancel(rl.stopping), u.ID, k, res.Status, cut(res.Detail, 2048))
		if err := rl.Reload(context.WithoutCancel(rl.stopping)); err != nil {
			rl.Log.Error("reload routing catalog", "err", err)
		}
	}
}

// Breakers is this node's breakers of channel id (all channels when 0),
// by channel and model, as of now (the relay's clock, also returned).
func (rl *Relay) Breakers(id int64) (time.Time, []breaker.View) {
	cfg := &rl.Options.Current().Breaker
	now := rl.now()
	entries := rl.breakers.List(id)
	out := make([]breaker.View, 0, len(entries))
	for _, e := range entries {
		out = append(out, breaker.View{Key: e.Key, Status: e.Status(now, cfg)})
	}
	return now, out
}

// closeBreaker closes channel id's breaker for model after an admin's
// successful test of that model.
func (rl *Relay) closeBreaker(id int64, model string) {
	if b := rl.breakers.Get(breaker.Key{Channel: id, Model: model}); b != nil && !b.Closed() {
		b.Reset()
		rl.Log.Info("channel breaker closed by a successful channel test", "channel", id, "model", model)
	}
}
