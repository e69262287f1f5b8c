package store

import (
	"context"
	"database/sql"
	"math"

	"gorm.io/gorm"
)

// LogStats sums the consume logs matching f (f.Type is ignored: the numbers
// are about consumption) from the usage cubes (cubes.go), so the answer does
// not grow with the logs:
//
//   - the whole UTC days of the range come from usage_days (a user,
//     username or key name filter) or usage_day_channels (model, channel
//     and group filters or none);
//   - the partial days at its ends, without a user, username or key name
//     filter, from usage_hour_channels for their whole hours, and from the
//     logs for the seconds before the first and after the last whole hour;
//     with such a filter, from the logs (the user's logs are indexed by
//     time, a username's by name);
//   - filters no cube is keyed by (status, error_code: they select error
//     rows, never consume logs written by the gateway; keyword) sum the
//     logs, as before 0020.
//
// All parts are read in one read transaction, so a concurrent insert is
// counted in all of them or in none. Logs deleted by the retention sweep
// stay in the rollups, so the whole days and hours of a range reaching
// before the retention are still summed; its edges (read from the logs) are
// not (docs/decisions/logs.md).
func (s *Store) LogStats(ctx context.Context, f LogFilter) (LogStat, error) {
	f.Type = LogConsume
	if f.Keyword != "" || f.Status != 0 || f.ErrorCode != "" {
		return s.LogStatsFromLogs(ctx, f)
	}
	var st LogStat
	err := s.readTx(ctx, func(db *gorm.DB) error {
		for _, p := range statPlan(f) {
			var part LogStat
			var err error
			if p.cube != nil {
				err = cubeFilter(db.Table(p.cube.table), f, *p.cube, p.from, p.to).Select(cubeSumsSQL).Scan(&part).Error
			} else {
				g := f
				g.Start, g.End = p.from, p.to-1
				err = g.apply(db.Model(&Log{})).Select(consumeSums).Scan(&part).Error
			}
			if err != nil {
				return err
			}
			st.Quota = clampAdd(st.Quota, part.Quota)
			st.RequestCount = clampAdd(st.RequestCount, part.RequestCount)
			st.PromptTokens = clampAdd(st.PromptTokens, part.PromptTokens)
			st.CompletionTokens = clampAdd(st.CompletionTokens, part.CompletionTokens)
		}
		return nil
	})
	return st, wrap("sum logs", err)
}

// readTx runs fn in a consistent read-only transaction, as WriteSnapshot:
// REPEATABLE READ on PostgreSQL and MySQL, a WAL read transaction on SQLite
// (read-only transactions there begin DEFERRED, so they take no write lock
// despite the DSN's _txlock=immediate, and writers are not held up).
func (s *Store) readTx(ctx context.Context, fn func(db *gorm.DB) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect != SQLite {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return s.transaction(s.read(ctx), fn, opts)
}

// cubeSumsSQL sums a cube's rows as consumeSums sums logs.
const cubeSumsSQL = "COALESCE(SUM(request_count), 0) AS request_count, COALESCE(SUM(quota), 0) AS quota, " +
	"COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens"

// openLow and openHigh stand for an open end of a range.
const (
	openLow  = math.MinInt64
	openHigh = math.MaxInt64
)

// statPart is a half-open time range [from, to) summed from a cube (cube
// set: one of the package's cube variables) or from the logs (cube nil).
type statPart struct {
	cube     *usageCube
	from, to int64
}

// statPlan splits f's time range into the parts LogStats sums. A pure
// function of the filter, so the split is table-tested.
func statPlan(f LogFilter) []statPart {
	from, to, ok := timeRange(f)
	if !ok {
		return nil
	}
	byUser := f.UserID != 0 || f.Username != "" || f.TokenName != ""
	days, hours := &cubeDayChannels, &cubeHourChans
	if byUser {
		days = &cubeDays
	}
	dayLo, dayHi := from, to
	if from != openLow {
		dayLo = floorTo(from+86399, 86400)
	}
	if to != openHigh {
		dayHi = floorTo(to, 86400)
	}
	if dayLo >= dayHi { // no whole day: the range is one edge
		return edge(from, to, byUser, hours)
	}
	parts := []statPart{{cube: days, from: dayLo, to: dayHi}}
	if from < dayLo {
		parts = append(parts, edge(from, dayLo, byUser, hours)...)
	}
	if dayHi < to {
		parts = append(parts, edge(dayHi, to, byUser, hours)...)
	}
	return parts
}

// timeRange is f's time range as [from, to) (openLow, openHigh: an open
// end); ok is false when it holds no second.
func timeRange(f LogFilter) (from, to int64, ok bool) {
	from, to = openLow, openHigh
	if f.Start != 0 {
		from = f.Start
	}
	if f.End != 0 && f.End < openHigh-1 {
		to = f.End + 1 // End is inclusive
	}
	// Far beyond any stored time (year 146 billion): an end that far is
	// open, a start that far matches nothing; the bucket arithmetic below
	// then never overflows.
	const far = 1 << 62
	if from < -far {
		from = openLow
	}
	if to > far {
		to = openHigh
	}
	if from >= to || from > far || to < -far {
		return 0, 0, false
	}
	return from, to, true
}

// edge is the parts of [from, to), a range within a day or two, both ends
// set: whole hours from the hour cube when the filter allows, the rest from
// the logs.
func edge(from, to int64, byUser bool, hours *usageCube) []statPart {
	if byUser {
		return []statPart{{from: from, to: to}}
	}
	hLo, hHi := floorTo(from+3599, 3600), floorTo(to, 3600)
	if hLo >= hHi {
		return []statPart{{from: from, to: to}}
	}
	parts := []statPart{{cube: hours, from: hLo, to: hHi}}
	if from < hLo {
		parts = append(parts, statPart{from: from, to: hLo})
	}
	if hHi < to {
		parts = append(parts, statPart{from: hHi, to: to})
	}
	return parts
}

// cubeFilter selects the rows of cube c matching f's model, channel, user,
// username, key name and group (those c is keyed by: statPlan picks a cube
// keyed by every filter set), with buckets starting in [from, to)
// (openLow/openHigh: no bound).
func cubeFilter(q *gorm.DB, f LogFilter, c usageCube, from, to int64) *gorm.DB {
	eq := func(col string, v any, set bool) {
		if set {
			q = q.Where(col+" = ?", v)
		}
	}
	eq("model_name", f.ModelName, f.ModelName != "")
	eq("channel_id", f.ChannelID, f.ChannelID != 0)
	if c.byUser {
		eq("user_id", f.UserID, f.UserID != 0)
		eq("username", f.Username, f.Username != "")
		eq("token_name", f.TokenName, f.TokenName != "")
	}
	if c.byGroup {
		eq("log_group", f.Group, f.Group != "")
	}
	if from != openLow {
		q = q.Where(c.startCol+" >= ?", from)
	}
	if to != openHigh {
		q = q.Where(c.startCol+" < ?", to)
	}
	return q
}

// UserUsageSince is the user's consumption per UTC day and model for days
// starting at or after since (a day start), ordered by day then model, from
// usage_days: the user dashboard's rows, equal to UsageByDayModel's over the
// logs.
func (s *Store) UserUsageSince(ctx context.Context, userID, since int64) ([]DayModelUsage, error) {
	var rows []DayModelUsage
	err := s.read(ctx).Table(cubeDays.table).
		Select("day_start, model_name, "+cubeSumsSQL).
		Where("user_id = ? AND day_start >= ?", userID, since).
		Group("day_start, model_name").Having("SUM(request_count) > 0").
		Order("day_start, model_name").Scan(&rows).Error
	return rows, wrap("usage by day and model", err)
}
