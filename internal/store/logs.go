package store

import (
	"context"
	"strings"
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
	if err := tx.insertLogRows(rows); err != nil {
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

// logColumns are the columns of logs in the order logValues gives them.
const logColumns = "id, user_id, created_at, type, content, username, token_name, token_id, model_name, log_group, " +
	"quota, prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, cache_write_1h_tokens, channel_id, " +
	"request_id, elapsed_time, is_stream, billing_source, plan_id, session_key, status, error_code, upstream_message"

const logColumnCount = 26

func logValues(args []any, l *Log) []any {
	return append(args, l.ID, l.UserID, l.CreatedAt, l.Type, l.Content, l.Username, l.TokenName, l.TokenID, l.ModelName, l.Group,
		l.Quota, l.PromptTokens, l.CompletionTokens, l.CachedTokens, l.CacheWriteTokens, l.CacheWrite1hTokens, l.ChannelID,
		l.RequestID, l.ElapsedTime, l.IsStream, l.BillingSource, l.PlanID, l.SessionKey, l.Status, l.ErrorCode, l.UpstreamMessage)
}

// insertLogRows writes rows with one plain multi-row INSERT per 200: every
// relayed call writes a log in its settlement's transaction, and GORM's
// batch create spends more CPU reflecting on the struct than the gateway
// spends on the rest of the settlement (docs/performance.md).
func (tx *Tx) insertLogRows(rows []Log) error {
	row := "(?" + strings.Repeat(", ?", logColumnCount-1) + ")"
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), 200)]
		rows = rows[len(chunk):]
		var q strings.Builder
		q.Grow(len(logColumns) + 40 + len(chunk)*(len(row)+2))
		q.WriteString("INSERT INTO logs (" + logColumns + ") VALUES ")
		args := make([]any, 0, len(chunk)*logColumnCount)
		for i := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(row)
			args = logValues(args, &chunk[i])
		}
		if err := tx.db.Exec(q.String(), args...).Error; err != nil {
			return err
		}
	}
	return nil
}
