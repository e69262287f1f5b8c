package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/internal/pricing"
	"gorm.io/gorm"
)

// The usage rollups (migration 0013) are the consume logs summed per UTC
// day and model (usage_day_models) and per UTC day and user
// (usage_day_users). The admin dashboard reads them instead of the logs: a
// month of a busy gateway is millions of logs but some thousands of rollup
// rows (docs/performance.md, Dashboard).
//
// They are exact: every consume log is added in the transaction that
// inserts it (InsertLogs, the only way logs are written), and
// DeleteLogsBefore recomputes the days it cut in its own transaction. They
// are derived data, not replicated: a node applying replicated logs must
// write them through InsertLogs, which rolls them up again.

// UsageDayModel is a row of usage_day_models.
type UsageDayModel struct {
	DayStart         int64  `gorm:"primaryKey;autoIncrement:false"`
	ModelName        string `gorm:"primaryKey;size:191"`
	RequestCount     int64  `gorm:"not null;default:0"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (UsageDayModel) TableName() string { return "usage_day_models" }

// UsageDayUser is a row of usage_day_users.
type UsageDayUser struct {
	DayStart     int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"primaryKey;autoIncrement:false"`
	RequestCount int64 `gorm:"not null;default:0"`
	Quota        int64 `gorm:"not null;default:0"`
}

func (UsageDayUser) TableName() string { return "usage_day_users" }

// utcDay is 00:00 UTC of the day holding t (t >= 0 for every stored log;
// the correction keeps a negative t on its own day all the same).
func utcDay(t int64) int64 {
	d := t - t%86400
	if t < 0 && t%86400 != 0 {
		d -= 86400
	}
	return d
}

// rollupMax bounds every rollup sum, as pricing.MaxCounter bounds the
// used_quota counters: an upstream may report absurd token counts (4e18 a
// call), and a sum past int64 would fail the settlement on PostgreSQL and
// MySQL (bigint out of range) and store an unreadable REAL on SQLite.
// Below it (every real gateway) the rollups equal the sums over the logs.
const rollupMax = pricing.MaxCounter

// clampAdd is a + b kept within ±rollupMax; a and b must be within it.
func clampAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > rollupMax-b:
		return rollupMax
	case b < 0 && a < -rollupMax-b:
		return -rollupMax
	}
	return a + b
}

// clampedSum is the SQL of col + v kept within ±rollupMax, as clampAdd,
// and its arguments. The sign picks the bound in Go: a bare "? > 0" would
// let PostgreSQL type the parameter as a 32-bit integer.
func clampedSum(col string, v int64) (string, []any) {
	if v < 0 {
		return fmt.Sprintf("CASE WHEN %[1]s < -%[2]d - ? THEN -%[2]d ELSE %[1]s + ? END", col, rollupMax), []any{v, v}
	}
	return fmt.Sprintf("CASE WHEN %[1]s > %[2]d - ? THEN %[2]d ELSE %[1]s + ? END", col, rollupMax), []any{v, v}
}

// upsert is an INSERT of one rollup row whose key exists adding its
// values (cols after the key) clamped.
func upsert(db *gorm.DB, table string, key []string, keyArgs []any, cols []string, vals []int64) error {
	all := append(slices.Clone(key), cols...)
	q := "INSERT INTO " + table + " (" + strings.Join(all, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(all)-1) + ") "
	if db.Dialector.Name() == "mysql" {
		q += "ON DUPLICATE KEY UPDATE "
	} else {
		q += "ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET "
	}
	args := slices.Clone(keyArgs)
	for _, v := range vals {
		args = append(args, v)
	}
	for i, c := range cols {
		set, a := clampedSum(table+"."+c, vals[i])
		if i > 0 {
			q += ", "
		}
		q += c + " = " + set
		args = append(args, a...)
	}
	return execStmt(db, 1, q, args...)
}

// rollup is consume logs summed per (day, model) and per (day, user).
type rollup struct {
	models map[UsageDayModel]*UsageDayModel
	users  map[UsageDayUser]*UsageDayUser
}

func newRollup() *rollup {
	return &rollup{models: map[UsageDayModel]*UsageDayModel{}, users: map[UsageDayUser]*UsageDayUser{}}
}

// add sums l in when it is a consume log.
func (r *rollup) add(l *Log) {
	if l.Type != LogConsume {
		return
	}
	clamp := func(v int64) int64 { return max(min(v, rollupMax), -rollupMax) }
	day := utcDay(l.CreatedAt)
	mk := UsageDayModel{DayStart: day, ModelName: l.ModelName}
	m := r.models[mk]
	if m == nil {
		m = &UsageDayModel{DayStart: day, ModelName: l.ModelName}
		r.models[mk] = m
	}
	m.RequestCount = clampAdd(m.RequestCount, 1)
	m.Quota = clampAdd(m.Quota, clamp(l.Quota))
	m.PromptTokens = clampAdd(m.PromptTokens, clamp(l.PromptTokens))
	m.CompletionTokens = clampAdd(m.CompletionTokens, clamp(l.CompletionTokens))
	uk := UsageDayUser{DayStart: day, UserID: l.UserID}
	u := r.users[uk]
	if u == nil {
		u = &UsageDayUser{DayStart: day, UserID: l.UserID}
		r.users[uk] = u
	}
	u.RequestCount = clampAdd(u.RequestCount, 1)
	u.Quota = clampAdd(u.Quota, clamp(l.Quota))
}

// write adds the sums to the rollup tables: one upsert per (day, model)
// and per (day, user), in sorted key order so concurrent transactions lock
// rollup rows in one order and cannot deadlock each other over them.
func (r *rollup) write(db *gorm.DB) error {
	ms := make([]*UsageDayModel, 0, len(r.models))
	for _, m := range r.models {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *UsageDayModel) int {
		return cmp.Or(cmp.Compare(a.DayStart, b.DayStart), cmp.Compare(a.ModelName, b.ModelName))
	})
	for _, m := range ms {
		err := upsert(db, "usage_day_models", []string{"day_start", "model_name"}, []any{m.DayStart, m.ModelName},
			[]string{"request_count", "quota", "prompt_tokens", "completion_tokens"},
			[]int64{m.RequestCount, m.Quota, m.PromptTokens, m.CompletionTokens})
		if err != nil {
			return err
		}
	}
	us := make([]*UsageDayUser, 0, len(r.users))
	for _, u := range r.users {
		us = append(us, u)
	}
	slices.SortFunc(us, func(a, b *UsageDayUser) int {
		return cmp.Or(cmp.Compare(a.DayStart, b.DayStart), cmp.Compare(a.UserID, b.UserID))
	})
	for _, u := range us {
		err := upsert(db, "usage_day_users", []string{"day_start", "user_id"}, []any{u.DayStart, u.UserID},
			[]string{"request_count", "quota"}, []int64{u.RequestCount, u.Quota})
		if err != nil {
			return err
		}
	}
	return nil
}

// rollUp adds the consume logs among rows to the rollups, and every row to
// log_hour_counts.
func (tx *Tx) rollUp(rows []Log) error {
	r := newRollup()
	cubes := newCubeSet(usageCubes)
	for i := range rows {
		r.add(&rows[i])
		cubes.add(&rows[i])
	}
	if err := r.write(tx.db); err != nil {
		return err
	}
	if err := cubes.write(tx.db); err != nil {
		return err
	}
	return countLogsOf(rows).write(tx.db)
}

// cutRollups is the rollups' side of deleting every log created before
// ts: the days wholly before ts go, and the day holding ts (when ts is not
// its first second) is recomputed from the logs left.
func (tx *Tx) cutRollups(ts int64) error {
	for _, table := range []string{"usage_day_models", "usage_day_users"} {
		if err := tx.db.Exec("DELETE FROM "+table+" WHERE day_start < ?", ts).Error; err != nil {
			return err
		}
	}
	if day := utcDay(ts); day < ts {
		if err := rebuildRollups(tx.db, day, day+86400); err != nil {
			return err
		}
	}
	return cutCubes(tx.db, ts)
}

// rebuildBatch is how many logs rebuildRollups reads per query.
const rebuildBatch = 10000

// rebuildRollups adds the consume logs created in [from, to) (to = 0: no
// end) to the rollups, whose rows for those days must not exist. The sums
// are taken in Go with the write path's clamping (rollup.add), not by SQL
// SUM, which would fail on absurd token counts instead of saturating.
func rebuildRollups(db *gorm.DB, from, to int64) error {
	r := newRollup()
	err := eachConsumeLogBatch(db, "id, user_id, created_at, type, model_name, quota, prompt_tokens, completion_tokens",
		from, to, rebuildBatch, func(rows []Log) error {
			for i := range rows {
				r.add(&rows[i])
			}
			return nil
		})
	if err != nil {
		return err
	}
	return r.write(db)
}

// eachConsumeLogBatch hands the consume logs created in [from, to) (to = 0:
// no end), with the given columns (created_at and id among them), to each
// in batches of batch rows (rebuildBatch), so a rebuild's memory is
// bounded by what it sums, not by the number of logs. The batches follow
// (created_at, id), the order of idx_log_type_time, the one index on the
// type (migration 0035): each query is a range scan of that index from
// the last row read.
func eachConsumeLogBatch(db *gorm.DB, columns string, from, to int64, batch int, each func([]Log) error) error {
	afterTime, afterID := from, int64(-1<<63) // the first batch: every id at from
	for {
		q := db.Model(&Log{}).Select(columns).
			Where("type = ? AND created_at >= ? AND (created_at > ? OR id > ?)", LogConsume, afterTime, afterTime, afterID)
		if to != 0 {
			q = q.Where("created_at < ?", to)
		}
		var rows []Log
		if err := q.Order("created_at, id").Limit(batch).Find(&rows).Error; err != nil {
			return err
		}
		if err := each(rows); err != nil {
			return err
		}
		if len(rows) < batch {
			return nil
		}
		last := rows[len(rows)-1]
		afterTime, afterID = last.CreatedAt, last.ID
	}
}
