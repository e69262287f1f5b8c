package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/store"
)

// recheckBatch bounds the channels one RecheckChannels run tests, each a
// real (tiny) upstream call of up to probeTimeout; the rest wait for the
// next run.
const recheckBatch = 20

// RecheckChannels runs the channel test (TestChannel, for the channel's
// first model) on every channel the system disabled whose last test is
// older than the ChannelRecheckMinutes option, re-enabling those that answer
// 200 and recording the failure on the others. Channels an admin disabled
// are never touched. Nodes sharing a database may run it together: a test
// moves the channel's test_time forward, so a channel is rarely tested
// twice, and re-enabling twice is harmless.
func (rl *Relay) RecheckChannels(ctx context.Context) error {
	every := rl.Options.Current().ChannelRecheck
	if every <= 0 {
		return nil
	}
	before := time.Now().Add(-every).Unix()
	due, err := rl.Store.AutoDisabledChannelsDue(ctx, before, recheckBatch)
	if err != nil {
		return err
	}
	// Enabled channels with keys retired from their pool: their retired
	// keys are tested too (recheck).
	pools, err := rl.Store.ChannelsWithRetiredKeysDue(ctx, before, recheckBatch)
	if err != nil {
		return err
	}
	due = append(due, pools...)
	var errs []error
	reenabled := false
	for _, ch := range due {
		if ctx.Err() != nil {
			break
		}
		ok, err := rl.recheck(ctx, ch)
		reenabled = reenabled || ok
		if err != nil && !errors.Is(err, store.ErrNotFound) { // deleted meanwhile
			errs = append(errs, fmt.Errorf("channel %d: %w", ch.ID, err))
		}
	}
	if reenabled {
		// This node serves it again at once; others within their reload.
		errs = append(errs, rl.Reload(ctx))
	}
	return errors.Join(errs...)
}

// recheck tests the keys of a channel the system disabled (all of them)
// or the retired keys of an enabled one, puts back in service those that
// answer (and the channel, when it was out), and records the outcome. It
// reports whether a channel or a key came back.
func (rl *Relay) recheck(ctx context.Context, ch store.Channel) (bool, error) {
	var model string
	if models := channel.Split(ch.Models); len(models) > 0 {
		model = models[0]
	}
	mapping, _ := channel.ParseModelMapping(ch.ModelMapping)
	u := &upstream{ID: ch.ID, Type: ch.Type, Key: ch.Key, BaseURL: ch.BaseURL, Mapping: mapping}
	u.resolve()
	start := time.Now()
	var working []string
	var last channel.TestResult
	var best time.Duration
	for _, k := range channel.Pool(ch.Key, ch.DisabledKeys) {
		if ch.Status == channel.StatusEnabled && k.Disabled == nil {
			continue // in service: nothing to recheck
		}
		res, _ := rl.testUpstream(ctx, u, k.Key, model)
		if res.OK() {
			working = append(working, k.ID)
			best = res.Elapsed
			continue
		}
		last = res
	}
	if len(working) == 0 && ch.Status != channel.StatusEnabled {
		msg := last.Detail
		if last.Status != 0 {
			msg = fmt.Sprintf("上游返回 %d: %s", last.Status, last.Detail)
		}
		rl.Log.Info("auto-disabled channel still failing its test", "channel", ch.ID, "status", last.Status)
		return false, rl.Store.RecordChannelTest(ctx, ch.ID, store.ChannelTest{Time: start.Unix(), Error: channel.CleanLastError(msg)})
	}
	test := store.ChannelTest{Time: start.Unix(), ResponseTime: best.Milliseconds(), OK: len(working) > 0}
	enabled, err := rl.Store.RestoreChannelKeys(ctx, ch.ID, working, test)
	switch {
	case enabled:
		rl.Log.Warn("channel re-enabled automatically: its test succeeded", "channel", ch.ID, "model", model, "keys", len(working))
	case len(working) > 0:
		rl.Log.Warn("channel keys back in service: their test succeeded", "channel", ch.ID, "model", model, "keys", len(working))
	}
	return len(working) > 0 && err == nil, err
}
