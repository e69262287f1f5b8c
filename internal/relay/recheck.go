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
	due, err := rl.Store.AutoDisabledChannelsDue(ctx, time.Now().Add(-every).Unix(), recheckBatch)
	if err != nil {
		return err
	}
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

// recheck tests one auto-disabled channel and records the outcome,
// reporting whether the channel was re-enabled.
func (rl *Relay) recheck(ctx context.Context, ch store.Channel) (bool, error) {
	var model string
	if models := channel.Split(ch.Models); len(models) > 0 {
		model = models[0]
	}
	start := time.Now()
	res := rl.TestChannel(ctx, ch, model)
	if !res.OK() {
		msg := res.Detail
		if res.Status != 0 {
			msg = fmt.Sprintf("上游返回 %d: %s", res.Status, res.Detail)
		}
		rl.Log.Info("auto-disabled channel still failing its test", "channel", ch.ID, "status", res.Status)
		return false, rl.Store.RecordChannelTest(ctx, ch.ID, store.ChannelTest{Time: start.Unix(), Error: channel.CleanLastError(msg)})
	}
	ok, err := rl.Store.ReEnableChannel(ctx, ch.ID, store.ChannelTest{Time: start.Unix(), ResponseTime: res.Elapsed.Milliseconds(), OK: true})
	if ok {
		rl.Log.Warn("channel re-enabled automatically: its test succeeded", "channel", ch.ID, "model", model)
	}
	return ok, err
}
