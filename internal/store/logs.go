package store

import (
	"context"
	"strconv"
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

// insertLogRows writes rows: on PostgreSQL in one INSERT of unnested
// column arrays (26 arguments however many rows), elsewhere in one plain
// multi-row INSERT per 200 rows. Every relayed call writes a log in its
// settlement's transaction; GORM's batch create spent more CPU reflecting
// on the struct than the gateway spent on the rest of the settlement, and
// a multi-row INSERT binds 26 arguments per row (docs/performance.md).
//
// On SQLite the INSERT is OR FAIL: a multi-row statement inside a larger
// transaction otherwise keeps a statement journal, the pages it changes
// copied so that a constraint failure could undo this statement alone, and
// past 64 KiB SQLite spills that journal to a temporary file it creates,
// writes and deletes on every commit (docs/performance.md, "Fourth round:
// the log insert's statement journal"). Nothing here needs the statement undone
// alone: an error from this INSERT fails the whole transaction, which is
// rolled back (billing then commits the batch's settlements one by one).
func (tx *Tx) insertLogRows(rows []Log) error {
	if tx.s.dialect == Postgres {
		_, err := tx.execDirect(insertLogArrays, logArrays(rows)...)
		return err
	}
	head := "INSERT INTO logs (" + logColumns + ") VALUES "
	if tx.s.dialect == SQLite {
		head = "INSERT OR FAIL INTO logs (" + logColumns + ") VALUES "
	}
	return tx.execRows(head, logColumnCount, len(rows),
		func(args []any, i int) []any { return logValues(args, &rows[i]) })
}

// insertLogArrays inserts the rows of logArrays' column arrays; each
// argument is cast to its array's type, which the column takes by
// assignment.
var insertLogArrays = func() string {
	var q strings.Builder
	q.WriteString("INSERT INTO logs (" + logColumns + ") SELECT * FROM unnest(")
	for i, column := range logArrays(nil) {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("$" + strconv.Itoa(i+1))
		switch column.(type) {
		case []int64:
			q.WriteString("::bigint[]")
		case []string:
			q.WriteString("::text[]")
		case []bool:
			q.WriteString("::boolean[]")
		}
	}
	q.WriteString(")")
	return q.String()
}()

// logArrays returns rows as one array per column, in logColumns' order.
func logArrays(rows []Log) []any {
	n := len(rows)
	ints := func(f func(*Log) int64) []int64 {
		a := make([]int64, n)
		for i := range rows {
			a[i] = f(&rows[i])
		}
		return a
	}
	texts := func(f func(*Log) string) []string {
		a := make([]string, n)
		for i := range rows {
			a[i] = f(&rows[i])
		}
		return a
	}
	stream := make([]bool, n)
	for i := range rows {
		stream[i] = rows[i].IsStream
	}
	return []any{
		ints(func(l *Log) int64 { return l.ID }),
		ints(func(l *Log) int64 { return l.UserID }),
		ints(func(l *Log) int64 { return l.CreatedAt }),
		ints(func(l *Log) int64 { return int64(l.Type) }),
		texts(func(l *Log) string { return l.Content }),
		texts(func(l *Log) string { return l.Username }),
		texts(func(l *Log) string { return l.TokenName }),
		ints(func(l *Log) int64 { return l.TokenID }),
		texts(func(l *Log) string { return l.ModelName }),
		texts(func(l *Log) string { return l.Group }),
		ints(func(l *Log) int64 { return l.Quota }),
		ints(func(l *Log) int64 { return l.PromptTokens }),
		ints(func(l *Log) int64 { return l.CompletionTokens }),
		ints(func(l *Log) int64 { return l.CachedTokens }),
		ints(func(l *Log) int64 { return l.CacheWriteTokens }),
		ints(func(l *Log) int64 { return l.CacheWrite1hTokens }),
		ints(func(l *Log) int64 { return l.ChannelID }),
		texts(func(l *Log) string { return l.RequestID }),
		ints(func(l *Log) int64 { return l.ElapsedTime }),
		stream,
		ints(func(l *Log) int64 { return int64(l.BillingSource) }),
		ints(func(l *Log) int64 { return l.PlanID }),
		texts(func(l *Log) string { return l.SessionKey }),
		ints(func(l *Log) int64 { return int64(l.Status) }),
		texts(func(l *Log) string { return l.ErrorCode }),
		texts(func(l *Log) string { return l.UpstreamMessage }),
	}
}
