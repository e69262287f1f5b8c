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
