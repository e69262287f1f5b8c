package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// LogFilter selects logs; a zero field matches every row.
type LogFilter struct {
	UserID    int64
	Type      int
	Start     int64 // created_at >= Start
	End       int64 // created_at <= End
	ModelName string
	Username  string
	TokenName string
	ChannelID int64
	Group     string
	// Status and ErrorCode match error rows (LogError) exactly.
	Status    int
	ErrorCode string
	// Keyword matches a substring of username, model name, token name,
	// content or request id.
	Keyword string
}

func (f LogFilter) apply(q *gorm.DB) *gorm.DB {
	eq := func(col string, v any, set bool) {
		if set {
			q = q.Where(col+" = ?", v)
		}
	}
	eq("user_id", f.UserID, f.UserID != 0)
	eq("type", f.Type, f.Type != 0)
	eq("model_name", f.ModelName, f.ModelName != "")
	eq("username", f.Username, f.Username != "")
	eq("token_name", f.TokenName, f.TokenName != "")
	eq("channel_id", f.ChannelID, f.ChannelID != 0)
	eq("log_group", f.Group, f.Group != "")
	eq("status", f.Status, f.Status != 0)
	eq("error_code", f.ErrorCode, f.ErrorCode != "")
	if f.Start != 0 {
		q = q.Where("created_at >= ?", f.Start)
	}
	if f.End != 0 {
		q = q.Where("created_at <= ?", f.End)
	}
	if f.Keyword != "" {
		// whereLike's OR list is grouped by gorm, so it cannot widen the
		// filters above (in particular the user id of self searches).
		q = q.Where(whereLike(q.Session(&gorm.Session{NewDB: true}), f.Keyword,
			"username", "model_name", "token_name", "content", "request_id"))
	}
	return q
}

// ListLogs returns the logs matching f, newest first, and their total count.
// A page past the first is read by key: the (created_at, id) of its first
// row is found with an OFFSET over those two columns alone, which the
// created_at index answers without reading the rows (SQLite's and InnoDB's
// index carry the id; PostgreSQL has idx_logs_created_id, migration 0020),
// then the page is the next Limit rows from that key. The rows are those of
// the OFFSET query (ListLogsOffset): (created_at, id) orders every row.
// When only the type and times filter (the console's admin log page), the
// total and the hour holding the page come from log_hour_counts, so the
// OFFSET walks one hour's index entries, not millions. Count and page are
// read in one read transaction.
func (s *Store) ListLogs(ctx context.Context, f LogFilter, p Page) ([]Log, int64, error) {
	var logs []Log
	var total int64
	err := s.readTx(ctx, func(db *gorm.DB) error {
		var err error
		if total, err = s.countLogs(db, f); err != nil {
			return err
		}
		if p.Offset <= 0 {
			return p.apply(f.apply(db.Model(&Log{})).Order("created_at DESC, id DESC")).Find(&logs).Error
		}
		bound, skip := int64(openHigh), int64(p.Offset)
		if f.countable() {
			if bound, skip, err = locatePage(db, f, skip); err != nil {
				return err
			}
		}
		q := f.apply(db.Model(&Log{}))
		if bound != openHigh {
			q = q.Where("created_at < ?", bound)
		}
		var first []struct{ CreatedAt, ID int64 }
		err = q.Select("created_at, id").Order("created_at DESC, id DESC").Offset(int(skip)).Limit(1).Scan(&first).Error
		if err != nil || len(first) == 0 {
			logs = []Log{}
			return err
		}
		c, id := first[0].CreatedAt, first[0].ID
		// created_at <= c first: a range the created_at index walks down
		// from c in the page's order; a bare OR lets SQLite sort every
		// older row instead.
		return Page{Limit: p.Limit}.apply(f.apply(db.Model(&Log{})).
			Where("created_at <= ? AND (created_at < ? OR id <= ?)", c, c, id).
			Order("created_at DESC, id DESC")).Find(&logs).Error
	})
	return logs, total, wrap("list logs", err)
}

// ListLogsOffset is the page of ListLogs read with a plain OFFSET, without
// the count: the reference the tests and the benchmark compare it with.
func (s *Store) ListLogsOffset(ctx context.Context, f LogFilter, p Page) ([]Log, error) {
	return s.listLogsPage(ctx, f, p)
}

func (s *Store) listLogsPage(ctx context.Context, f LogFilter, p Page) ([]Log, error) {
	var logs []Log
	err := p.apply(f.apply(s.read(ctx).Model(&Log{})).Order("created_at DESC, id DESC")).Find(&logs).Error
	return logs, wrap("list logs", err)
}

// LogStat sums the consumption recorded by consume logs.
type LogStat struct {
	Quota            int64
	RequestCount     int64
	PromptTokens     int64
	CompletionTokens int64
}

// consumeSums are the aggregate columns shared by LogStats and
// UsageByDayModel. COALESCE because SUM over no rows is NULL.
const consumeSums = "COUNT(*) AS request_count, COALESCE(SUM(quota), 0) AS quota, " +
	"COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens"

// LogStatsFromLogs sums the consume logs matching f from the logs
// themselves, as LogStats did before the rollups of migration 0020: the
// reference the tests and the benchmark compare LogStats with.
func (s *Store) LogStatsFromLogs(ctx context.Context, f LogFilter) (LogStat, error) {
	f.Type = LogConsume
	var st LogStat
	err := f.apply(s.read(ctx).Model(&Log{})).Select(consumeSums).Scan(&st).Error
	return st, wrap("sum logs", err)
}

// DayModelUsage is the consumption of one model on one UTC day.
type DayModelUsage struct {
	Day              int64 `gorm:"column:day_start"` // Unix time of the day's 00:00 UTC
	ModelName        string
	RequestCount     int64
	Quota            int64
	PromptTokens     int64
	CompletionTokens int64
}

// UsageByDayModel groups the consume logs matching f created at or after
// since by UTC day and model, ordered by day then model. f.Type is ignored.
func (s *Store) UsageByDayModel(ctx context.Context, f LogFilter, since int64) ([]DayModelUsage, error) {
	f.Type = LogConsume
	// Integer modulo gives the day's start on every engine; MySQL's "/" is
	// decimal division, so no division is used.
	q := f.apply(s.read(ctx).Model(&Log{})).
		Select("created_at - (created_at % 86400) AS day_start, model_name, "+consumeSums).
		Where("created_at >= ?", since).
		Group("created_at - (created_at % 86400), model_name").
		Order("day_start, model_name")
	var rows []DayModelUsage
	err := q.Scan(&rows).Error
	return rows, wrap("usage by day and model", err)
}

// DeleteLogsBefore deletes logs created before ts in one statement and
// returns how many went; the usage rollups lose the same logs in the same
// transaction.
func (s *Store) DeleteLogsBefore(ctx context.Context, ts int64) (int64, error) {
	var n int64
	err := s.write(ctx, "delete logs", func(tx *Tx) error {
		res := tx.db.Where("created_at < ?", ts).Delete(&Log{})
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		if err := tx.cutRollups(ts); err != nil {
			return err
		}
		// One event for the whole range: peers delete the same range.
		return tx.record(Change{Table: "logs", Op: "DELETE", bulk: &BulkDelete{Before: ts}})
	})
	return n, err
}

// DeleteErrorLogsBefore deletes error logs (LogError) created before ts,
// batch rows per transaction, and returns how many went. Small batches keep
// each statement's locks short on every engine, so the sweep never holds
// up the log writer or the consume logs of calls being settled. The ids are
// read first, then deleted by id: MySQL allows no LIMIT in a DELETE's
// subquery, and a DELETE ... LIMIT is not portable.
func (s *Store) DeleteErrorLogsBefore(ctx context.Context, ts int64, batch int) (int64, error) {
	if batch <= 0 {
		batch = 500
	}
	var total int64
	for {
		var ids []int64
		err := s.read(ctx).Model(&Log{}).Where("type = ? AND created_at < ?", LogError, ts).
			Order("created_at, id").Limit(batch).Pluck("id", &ids).Error
		if err != nil {
			return total, wrap("list old error logs", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		var n int64
		err = s.write(ctx, "delete error logs", func(tx *Tx) error {
			// type is checked again: the ids were read outside this
			// transaction.
			var err error
			if n, err = tx.deleteCountedLogs("id IN ? AND type = ?", ids, LogError); err != nil {
				return err
			}
			// One bulk event per batch, as DeleteLogsBefore.
			return tx.record(Change{Table: "logs", Op: "DELETE", bulk: &BulkDelete{ErrorIDs: ids}})
		})
		if err != nil {
			return total, fmt.Errorf("after %d rows: %w", total, err)
		}
		total += n
		if len(ids) < batch {
			return total, nil
		}
	}
}

// DeleteLogsForRetention deletes the logs of every type created before ts,
// batch rows per transaction with pause between transactions, and returns
// how many went. It is the retention sweep's (LogRetentionDays): unlike
// DeleteLogsBefore it keeps the usage rollups, so the dashboards and the
// stats of past months survive the logs (docs/operations.md). Each
// transaction deletes by id a batch read just before, oldest first, so it
// holds its locks for a few thousand rows only and the log writer and the
// settlements go on between batches. Nodes sweeping one database together
// delete the same or disjoint ids: a row already gone is not counted twice.
func (s *Store) DeleteLogsForRetention(ctx context.Context, ts int64, batch int, pause time.Duration) (int64, error) {
	if batch <= 0 {
		batch = 2000
	}
	var total int64
	for {
		var ids []int64
		err := s.read(ctx).Model(&Log{}).Where("created_at < ?", ts).
			Order("created_at, id").Limit(batch).Pluck("id", &ids).Error
		if err != nil {
			return total, wrap("list old logs", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		var n int64
		err = s.write(ctx, "delete old logs", func(tx *Tx) error {
			// created_at is checked again: the ids were read outside
			// this transaction (ids are never reused, so this is a guard).
			var err error
			if n, err = tx.deleteCountedLogs("id IN ? AND created_at < ?", ids, ts); err != nil {
				return err
			}
			return tx.record(Change{Table: "logs", Op: "DELETE", bulk: &BulkDelete{RetainIDs: ids}})
		})
		if err != nil {
			return total, fmt.Errorf("after %d rows: %w", total, err)
		}
		total += n
		if len(ids) < batch {
			return total, nil
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-time.After(pause):
			}
		}
	}
}
