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
	withRow := tx.s.outbox != nil && !tx.remote // only the outbox reads the row
	for i := range rows {
		c := Change{Table: "logs", Op: "INSERT", ID: rows[i].ID}
		if withRow {
			row := rows[i] // the outbox encodes it at commit: a copy the caller cannot change
			c.row = &row
		}
		if err := tx.record(c); err != nil {
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

// logField is one column of logs as the hand-written log INSERTs write
// it; exactly one of its accessors is set.
type logField struct {
	column string
	i64    func(*Log) int64
	str    func(*Log) string
	flag   func(*Log) bool
}

// logFields are the columns of logs in the order every log INSERT writes
// them: the arguments of the multi-row INSERT (logValues), PostgreSQL's
// column arrays (logArrays) and SQLite's direct binds (bindLog).
var logFields = [...]logField{
	{column: "id", i64: func(l *Log) int64 { return l.ID }},
	{column: "user_id", i64: func(l *Log) int64 { return l.UserID }},
	{column: "created_at", i64: func(l *Log) int64 { return l.CreatedAt }},
	{column: "type", i64: func(l *Log) int64 { return int64(l.Type) }},
	{column: "content", str: func(l *Log) string { return l.Content }},
	{column: "username", str: func(l *Log) string { return l.Username }},
	{column: "token_name", str: func(l *Log) string { return l.TokenName }},
	{column: "token_id", i64: func(l *Log) int64 { return l.TokenID }},
	{column: "model_name", str: func(l *Log) string { return l.ModelName }},
	{column: "log_group", str: func(l *Log) string { return l.Group }},
	{column: "quota", i64: func(l *Log) int64 { return l.Quota }},
	{column: "prompt_tokens", i64: func(l *Log) int64 { return l.PromptTokens }},
	{column: "completion_tokens", i64: func(l *Log) int64 { return l.CompletionTokens }},
	{column: "cached_tokens", i64: func(l *Log) int64 { return l.CachedTokens }},
	{column: "cache_write_tokens", i64: func(l *Log) int64 { return l.CacheWriteTokens }},
	{column: "cache_write_1h_tokens", i64: func(l *Log) int64 { return l.CacheWrite1hTokens }},
	{column: "channel_id", i64: func(l *Log) int64 { return l.ChannelID }},
	{column: "request_id", str: func(l *Log) string { return l.RequestID }},
	{column: "elapsed_time", i64: func(l *Log) int64 { return l.ElapsedTime }},
	{column: "is_stream", flag: func(l *Log) bool { return l.IsStream }},
	{column: "billing_source", i64: func(l *Log) int64 { return int64(l.BillingSource) }},
	{column: "plan_id", i64: func(l *Log) int64 { return l.PlanID }},
	{column: "session_key", str: func(l *Log) string { return l.SessionKey }},
	{column: "status", i64: func(l *Log) int64 { return int64(l.Status) }},
	{column: "error_code", str: func(l *Log) string { return l.ErrorCode }},
	{column: "upstream_message", str: func(l *Log) string { return l.UpstreamMessage }},
}

const logColumnCount = len(logFields)

// logColumns lists logFields' columns, comma-separated.
var logColumns = func() string {
	names := make([]string, len(logFields))
	for i, f := range logFields {
		names[i] = f.column
	}
	return strings.Join(names, ", ")
}()

// The heads of the multi-row log INSERTs (insertLogRows).
var (
	insertLogsHead       = "INSERT INTO logs (" + logColumns + ") VALUES "
	insertLogsSQLiteHead = "INSERT OR FAIL INTO logs (" + logColumns + ") VALUES "
)

func logValues(args []any, l *Log) []any {
	for i := range logFields {
		switch f := &logFields[i]; {
		case f.i64 != nil:
			args = append(args, f.i64(l))
		case f.str != nil:
			args = append(args, f.str(l))
		default:
			args = append(args, f.flag(l))
		}
	}
	return args
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
	head := insertLogsHead
	if tx.s.dialect == SQLite {
		if tx.conn != nil {
			return tx.insertLogsDirect(rows)
		}
		head = insertLogsSQLiteHead
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

// logArrays returns rows as one array per column, in logFields' order.
func logArrays(rows []Log) []any {
	arrays := make([]any, len(logFields))
	for c := range logFields {
		switch f := &logFields[c]; {
		case f.i64 != nil:
			a := make([]int64, len(rows))
			for i := range rows {
				a[i] = f.i64(&rows[i])
			}
			arrays[c] = a
		case f.str != nil:
			a := make([]string, len(rows))
			for i := range rows {
				a[i] = f.str(&rows[i])
			}
			arrays[c] = a
		default:
			a := make([]bool, len(rows))
			for i := range rows {
				a[i] = f.flag(&rows[i])
			}
			arrays[c] = a
		}
	}
	return arrays
}
