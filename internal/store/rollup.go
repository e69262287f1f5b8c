package store

import (
	"cmp"
	"slices"

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

// rollUp adds the consume logs among rows to the rollups. A batch of logs
// collapses to one upsert per (day, model) and per (day, user); keys are
// written in sorted order so concurrent transactions lock rollup rows in
// one order and cannot deadlock each other over them.
func (tx *Tx) rollUp(rows []Log) error {
	models := map[UsageDayModel]*UsageDayModel{}
	users := map[UsageDayUser]*UsageDayUser{}
	for i := range rows {
		l := &rows[i]
		if l.Type != LogConsume {
			continue
		}
		day := utcDay(l.CreatedAt)
		mk := UsageDayModel{DayStart: day, ModelName: l.ModelName}
		m := models[mk]
		if m == nil {
			m = &UsageDayModel{DayStart: day, ModelName: l.ModelName}
			models[mk] = m
		}
		m.RequestCount++
		m.Quota += l.Quota
		m.PromptTokens += l.PromptTokens
		m.CompletionTokens += l.CompletionTokens
		uk := UsageDayUser{DayStart: day, UserID: l.UserID}
		u := users[uk]
		if u == nil {
			u = &UsageDayUser{DayStart: day, UserID: l.UserID}
			users[uk] = u
		}
		u.RequestCount++
		u.Quota += l.Quota
	}
	if len(models) == 0 {
		return nil
	}
	ms := make([]*UsageDayModel, 0, len(models))
	for _, m := range models {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *UsageDayModel) int {
		return cmp.Or(cmp.Compare(a.DayStart, b.DayStart), cmp.Compare(a.ModelName, b.ModelName))
	})
	qm := "INSERT INTO usage_day_models (day_start, model_name, request_count, quota, prompt_tokens, completion_tokens) " +
		"VALUES (?, ?, ?, ?, ?, ?) " + tx.s.onConflictUpdate("day_start, model_name") +
		" request_count = usage_day_models.request_count + ?, quota = usage_day_models.quota + ?," +
		" prompt_tokens = usage_day_models.prompt_tokens + ?, completion_tokens = usage_day_models.completion_tokens + ?"
	for _, m := range ms {
		err := tx.db.Exec(qm, m.DayStart, m.ModelName, m.RequestCount, m.Quota, m.PromptTokens, m.CompletionTokens,
			m.RequestCount, m.Quota, m.PromptTokens, m.CompletionTokens).Error
		if err != nil {
			return err
		}
	}
	us := make([]*UsageDayUser, 0, len(users))
	for _, u := range users {
		us = append(us, u)
	}
	slices.SortFunc(us, func(a, b *UsageDayUser) int {
		return cmp.Or(cmp.Compare(a.DayStart, b.DayStart), cmp.Compare(a.UserID, b.UserID))
	})
	qu := "INSERT INTO usage_day_users (day_start, user_id, request_count, quota) VALUES (?, ?, ?, ?) " +
		tx.s.onConflictUpdate("day_start, user_id") +
		" request_count = usage_day_users.request_count + ?, quota = usage_day_users.quota + ?"
	for _, u := range us {
		if err := tx.db.Exec(qu, u.DayStart, u.UserID, u.RequestCount, u.Quota, u.RequestCount, u.Quota).Error; err != nil {
			return err
		}
	}
	return nil
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
		return rebuildRollups(tx.db, day, day+86400)
	}
	return nil
}

// rebuildRollups inserts the rollup rows of the consume logs created in
// [from, to) (to = 0: no end), whose rollup rows must not exist. Integer
// modulo gives a day's start on every engine (as UsageByDayModel); logs
// never have a negative created_at.
func rebuildRollups(db *gorm.DB, from, to int64) error {
	where := "type = ? AND created_at >= ?"
	args := []any{LogConsume, from}
	if to != 0 {
		where += " AND created_at < ?"
		args = append(args, to)
	}
	const day = "created_at - (created_at % 86400)"
	err := db.Exec("INSERT INTO usage_day_models (day_start, model_name, request_count, quota, prompt_tokens, completion_tokens) "+
		"SELECT "+day+", model_name, COUNT(*), COALESCE(SUM(quota), 0), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) "+
		"FROM logs WHERE "+where+" GROUP BY "+day+", model_name", args...).Error
	if err != nil {
		return err
	}
	return db.Exec("INSERT INTO usage_day_users (day_start, user_id, request_count, quota) "+
		"SELECT "+day+", user_id, COUNT(*), COALESCE(SUM(quota), 0) "+
		"FROM logs WHERE "+where+" GROUP BY "+day+", user_id", args...).Error
}
