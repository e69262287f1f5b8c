package store

import (
	"context"
	"fmt"

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
func (s *Store) ListLogs(ctx context.Context, f LogFilter, p Page) ([]Log, int64, error) {
	q := f.apply(s.read(ctx).Model(&Log{}))
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count logs", err)
	}
	var logs []Log
	err := p.apply(q.Order("created_at DESC, id DESC")).Find(&logs).Error
	return logs, total, wrap("list logs", err)
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

// LogStats sums the consume logs matching f. f.Type is ignored: the numbers
// are about consumption, so only consume logs count.
func (s *Store) LogStats(ctx context.Context, f LogFilter) (LogStat, error) {
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
		return tx.record(Change{Table: "logs", Op: "DELETE", bulk: &bulkDelete{Before: ts}})
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
			res := tx.db.Where("id IN ? AND type = ?", ids, LogError).Delete(&Log{})
			if res.Error != nil {
				return res.Error
			}
			n = res.RowsAffected
			// One bulk event per batch, as DeleteLogsBefore.
			return tx.record(Change{Table: "logs", Op: "DELETE", bulk: &bulkDelete{ErrorIDs: ids}})
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
