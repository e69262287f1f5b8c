package app

import (
	"context"
	"time"
)

// Subscriptions whose end has passed read as expired at once (plan.Status);
// this job writes status 2 on them, so the database, the cluster's change
// records and the reports agree with what is read.
const (
	// subscriptionExpiryEvery is the job's pace. Nothing waits on it:
	// every read already applies the end time.
	subscriptionExpiryEvery = 5 * time.Minute
	// subscriptionExpiryBatch is the rows written per transaction.
	subscriptionExpiryBatch = 500
)

// ExpireSubscriptions writes status 2 on the active subscriptions whose end
// is at or before now and returns how many. The background loop calls it
// every subscriptionExpiryEvery; tests pass a clock.
func (a *App) ExpireSubscriptions(ctx context.Context, now time.Time) (int64, error) {
	n, err := a.Store.ExpireUserPlans(ctx, now.Unix(), subscriptionExpiryBatch)
	if n > 0 {
		a.log.Info("expired subscriptions", "rows", n)
	}
	return n, err
}

// The plan usage janitor (docs/decisions/plan-limits.md).
const (
	// planUsageSweepEvery is the janitor's pace.
	planUsageSweepEvery = 5 * time.Minute
	// staleUsageHoldAge is how old a usage reservation must be before the
	// janitor gives it back: as for money holds (staleHoldAge), longer
	// than any call, so only reservations of processes that died before
	// settling qualify. A reservation released too early would make its
	// call's settlement a no-op and lose the call's real count; one
	// released late only keeps an estimate counted a while longer, on the
	// operator's side.
	staleUsageHoldAge = staleHoldAge
	// planUsageBatch is the rows one step releases or deletes;
	// planUsageMaxBatches bounds the steps of one sweep, so a backlog is
	// worked off over several sweeps instead of in one long run.
	planUsageBatch      = 500
	planUsageMaxBatches = 20
	// planUsageIdle is how long the relay keeps in memory (SQLite) the
	// counters of a subscription and model that no call used.
	planUsageIdle = time.Hour
)

// SweepPlanUsage releases the usage reservations older than
// staleUsageHoldAge at now and deletes the usage buckets no window counts
// any more, each in batches of planUsageBatch, at most planUsageMaxBatches
// of each. The background loop calls it every planUsageSweepEvery; tests
// pass a clock.
func (a *App) SweepPlanUsage(ctx context.Context, now time.Time) (released int, pruned int64, err error) {
	cutoff := now.Add(-staleUsageHoldAge)
	for range planUsageMaxBatches {
		n, err := a.Store.ReleaseStaleUsageHolds(ctx, cutoff, planUsageBatch)
		released += n
		if err != nil {
			return released, pruned, err
		}
		if n < planUsageBatch {
			break
		}
	}
	a.relay.ForgetIdlePlanUsage(planUsageIdle)
	if released > 0 {
		a.log.Warn("gave back plan usage reserved for calls that never settled", "reservations", released)
	}
	for range planUsageMaxBatches {
		n, err := a.Store.PruneUsage(ctx, now, planUsageBatch)
		pruned += n
		if err != nil {
			return released, pruned, err
		}
		if n < planUsageBatch {
			break
		}
	}
	return released, pruned, nil
}
