package app

import (
	"context"
	"time"
)

// Log retention (option LogRetentionDays, docs/operations.md): logs of
// every type older than the retention are deleted by an hourly sweep on
// every node; the usage rollups keep them.
const (
	// logRetentionEvery is the sweep's pace: retention is counted in days,
	// so within an hour is close enough.
	logRetentionEvery = time.Hour
	// logRetentionBatch is the rows deleted per transaction, and
	// logRetentionPause the pause between transactions: a few milliseconds
	// of locks at a time, and the writers' transactions in between.
	logRetentionBatch = 2000
	logRetentionPause = 20 * time.Millisecond
)

// SweepLogs deletes the logs and audit entries created before now −
// LogRetentionDays (0 days: none) in small batches, and returns how many
// logs went. A log created exactly
// at the boundary second stays. The background loop calls it every
// logRetentionEvery with time.Now; tests pass a clock.
func (a *App) SweepLogs(ctx context.Context, now time.Time) (int64, error) {
	keep := a.Options.Current().LogRetention
	if keep <= 0 {
		return 0, nil
	}
	n, err := a.Store.DeleteLogsForRetention(ctx, now.Add(-keep).Unix(), logRetentionBatch, logRetentionPause)
	if n > 0 {
		a.log.Info("deleted logs past retention", "rows", n, "retention", keep)
	}
	if err != nil {
		return n, err
	}
	// The audit trail keeps the same days as the logs (issue 30 §4).
	audited, err := a.Store.DeleteAuditForRetention(ctx, now.Add(-keep).Unix(), logRetentionBatch, logRetentionPause)
	if audited > 0 {
		a.log.Info("deleted audit entries past retention", "rows", audited, "retention", keep)
	}
	return n, err
}
