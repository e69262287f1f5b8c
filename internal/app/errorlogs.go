package app

import (
	"context"
	"time"
)

// Error logs (type 5, the relay's failed calls) are kept for the
// ErrorLogRetentionDays option; this sweep deletes older ones.
const (
	// errorLogQueue bounds the error rows waiting for the database: past
	// it, rows are shed (counted and warned about), never waited for.
	errorLogQueue = 8192
	// errorLogSweepEvery is the sweep's pace: retention is counted in days,
	// so within an hour is close enough.
	errorLogSweepEvery = time.Hour
	// errorLogSweepBatch is the rows deleted per transaction.
	errorLogSweepBatch = 500
)

// SweepErrorLogs deletes the error logs older than ErrorLogRetentionDays
// at now (0 days: none) in small batches, and returns how many went. The
// background loop calls it every errorLogSweepEvery; tests pass a clock.
// Only error rows go: consume and audit logs are the admin's to delete.
func (a *App) SweepErrorLogs(ctx context.Context, now time.Time) (int64, error) {
	keep := a.Options.Current().ErrorLogRetention
	if keep <= 0 {
		return 0, nil
	}
	n, err := a.Store.DeleteErrorLogsBefore(ctx, now.Add(-keep).Unix(), errorLogSweepBatch)
	if n > 0 {
		a.log.Info("deleted old error logs", "rows", n, "retention", keep)
	}
	return n, err
}
