package store

import (
	"context"
	"time"
)

// Log types.
const (
	LogTopup   = 1
	LogConsume = 2
	LogAdmin   = 3
	LogSystem  = 4
	// LogError is a failed relay call: a refusal after the key was
	// identified, a failed upstream attempt or a stream broken mid-way
	// (relay errorlog.go). The spec defines 1-4 (0 = all, as a filter); 5
	// is modelgate's. Error rows carry quota 0 and are never summed as
	// consumption (LogStats, UsageByDayModel).
	LogError = 5
)

// InsertLogs inserts rows in the transaction, allocating their ids in one
// step, and adds the consume logs among them to the usage rollups
// (rollup.go). CreatedAt is set to now where it is zero.
func (tx *Tx) InsertLogs(rows []Log) error {
	if len(rows) == 0 {
		return nil
	}
	first, err := tx.allocIDs("logs", len(rows))
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	for i := range rows {
		rows[i].ID = nthID(first, i)
		if rows[i].CreatedAt == 0 {
			rows[i].CreatedAt = now
		}
	}
	if err := tx.db.CreateInBatches(rows, 200).Error; err != nil {
		return err
	}
	if err := tx.rollUp(rows); err != nil {
		return err
	}
	for i := range rows {
		row := rows[i] // the outbox encodes it at commit: a copy the caller cannot change
		if err := tx.record(Change{Table: "logs", Op: "INSERT", ID: row.ID, row: &row}); err != nil {
			return err
		}
	}
	return nil
}

// InsertBatch writes rows in one transaction; it is the sink of the batching
// log writer.
func (s *Store) InsertBatch(ctx context.Context, rows []Log) error {
	return s.write(ctx, "insert logs", func(tx *Tx) error { return tx.InsertLogs(rows) })
}
