package store

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// log_hour_counts (migration 0020) counts the logs of every type per UTC
// hour and type. Unlike the usage rollups it follows the logs exactly,
// through every delete (the spec's DELETE, the error-log and retention
// sweeps): it is how the log lists count their total and find a deep page
// without walking millions of index entries (ListLogs), for the filters it
// can answer (type and times).
var cubeLogHours = usageCube{table: "log_hour_counts", bucket: 3600, startCol: "hour_start"}

// logCounts are count changes per (hour, type).
type logCounts map[[2]int64]int64

func (c logCounts) add(createdAt int64, typ int, n int64) {
	c[[2]int64{floorTo(createdAt, 3600), int64(typ)}] += n
}

// write adds the changes to log_hour_counts (multi-row upserts in key
// order, as the rollups).
func (c logCounts) write(db *gorm.DB) error {
	keys := make([][2]int64, 0, len(c))
	for k, n := range c {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), cubeChunk)]
		keys = keys[len(chunk):]
		args := make([]any, 0, 3*len(chunk))
		vals := make([]string, len(chunk))
		for i, k := range chunk {
			vals[i] = "(?, ?, ?)"
			args = append(args, k[0], k[1], c[k])
		}
		q := "INSERT INTO log_hour_counts (hour_start, type, n) VALUES " + strings.Join(vals, ", ")
		if db.Dialector.Name() == "mysql" {
			q += " ON DUPLICATE KEY UPDATE n = n + VALUES(n)"
		} else {
			q += " ON CONFLICT (hour_start, type) DO UPDATE SET n = log_hour_counts.n + excluded.n"
		}
		if err := execStmt(db, len(chunk), q, args...); err != nil {
			return err
		}
	}
	return nil
}

// countLogsOf adds rows to the counts.
func countLogsOf(rows []Log) logCounts {
	c := logCounts{}
	for i := range rows {
		c.add(rows[i].CreatedAt, rows[i].Type, 1)
	}
	return c
}

// recountLogHours recomputes the counts of the hours starting in [from, to)
// (to = 0: no end) from the logs.
func recountLogHours(db *gorm.DB, from, to int64) error {
	// Plain SQL: db may be a transaction's chained handle, on which gorm
	// builders would share one statement.
	delWhere, selWhere, args := "hour_start >= ?", "created_at >= ?", []any{from}
	if to != 0 {
		delWhere, selWhere, args = delWhere+" AND hour_start < ?", selWhere+" AND created_at < ?", []any{from, to}
	}
	if err := db.Exec("DELETE FROM log_hour_counts WHERE "+delWhere, args...).Error; err != nil {
		return err
	}
	// Integer modulo: MySQL's "/" is decimal division. Every stored time
	// is ≥ 0, where the modulo gives the hour's start.
	var rows []struct {
		HourStart int64
		Type      int
		N         int64
	}
	err := db.Raw("SELECT created_at - (created_at % 3600) AS hour_start, type, COUNT(*) AS n FROM logs WHERE "+
		selWhere+" GROUP BY created_at - (created_at % 3600), type", args...).Scan(&rows).Error
	if err != nil {
		return err
	}
	c := logCounts{}
	for _, r := range rows {
		c[[2]int64{r.HourStart, int64(r.Type)}] = r.N
	}
	return c.write(db)
}

// deleteCountedLogs deletes the logs matching where (an id list: the rows
// are locked first, so a concurrent delete of the same ids cannot count
// them twice) and takes them off log_hour_counts.
func (tx *Tx) deleteCountedLogs(where string, args ...any) (int64, error) {
	var gone []struct {
		CreatedAt int64
		Type      int
	}
	if err := tx.forUpdate().Model(&Log{}).Select("created_at, type").Where(where, args...).Scan(&gone).Error; err != nil {
		return 0, err
	}
	res := tx.db.Where(where, args...).Delete(&Log{})
	if res.Error != nil {
		return 0, res.Error
	}
	c := logCounts{}
	for _, g := range gone {
		c.add(g.CreatedAt, g.Type, -1)
	}
	return res.RowsAffected, c.write(tx.db)
}

// countable reports whether log_hour_counts answers f: no filter but the
// type and the times.
func (f LogFilter) countable() bool {
	return f.UserID == 0 && f.ModelName == "" && f.Username == "" && f.TokenName == "" && f.ChannelID == 0 &&
		f.Group == "" && f.Status == 0 && f.ErrorCode == "" && f.Keyword == ""
}

// countPlan splits f's time range into whole hours (log_hour_counts) and
// the seconds at its ends (the logs), newest part first: the order of the
// log lists.
func countPlan(f LogFilter) []statPart {
	from, to, ok := timeRange(f)
	if !ok {
		return nil
	}
	hLo, hHi := from, to
	if from != openLow {
		hLo = floorTo(from+3599, 3600)
	}
	if to != openHigh {
		hHi = floorTo(to, 3600)
	}
	if hLo >= hHi {
		return []statPart{{from: from, to: to}}
	}
	var parts []statPart
	if hHi < to {
		parts = append(parts, statPart{from: hHi, to: to})
	}
	parts = append(parts, statPart{cube: &cubeLogHours, from: hLo, to: hHi})
	if from < hLo {
		parts = append(parts, statPart{from: from, to: hLo})
	}
	return parts
}

// countLogs is the number of logs matching f: from log_hour_counts and the
// edges' logs when f is countable, else COUNT(*).
func (s *Store) countLogs(db *gorm.DB, f LogFilter) (int64, error) {
	if !f.countable() {
		var n int64
		err := f.apply(db.Model(&Log{})).Count(&n).Error
		return n, err
	}
	var total int64
	for _, p := range countPlan(f) {
		n, err := countPart(db, f, p)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// countPart counts the logs of f in one part.
func countPart(db *gorm.DB, f LogFilter, p statPart) (int64, error) {
	var n int64
	if p.cube == nil {
		g := f
		g.Start, g.End = p.from, p.to-1
		err := g.apply(db.Model(&Log{})).Count(&n).Error
		return n, err
	}
	err := hourCounts(db, f, p).Select("COALESCE(SUM(n), 0)").Scan(&n).Error
	return n, err
}

// hourCounts selects f's rows of log_hour_counts in part p.
func hourCounts(db *gorm.DB, f LogFilter, p statPart) *gorm.DB {
	q := db.Table("log_hour_counts")
	if f.Type != 0 {
		q = q.Where("type = ?", f.Type)
	}
	if p.from != openLow {
		q = q.Where("hour_start >= ?", p.from)
	}
	if p.to != openHigh {
		q = q.Where("hour_start < ?", p.to)
	}
	return q
}

// locatePage finds where the row at offset (newest first) of a countable
// f lies: the rows created at or after bound (openHigh: none) are the
// first offset−skip rows, so that row is the skip-th of those created
// before bound. It walks the hour counts instead of the index entries.
func locatePage(db *gorm.DB, f LogFilter, offset int64) (bound, skip int64, err error) {
	skip = offset
	bound = openHigh
	for _, p := range countPlan(f) {
		if p.cube == nil {
			n, err := countPart(db, f, p)
			if err != nil {
				return 0, 0, err
			}
			if skip < n {
				return bound, skip, nil
			}
			skip -= n
			bound = p.from
			continue
		}
		var hours []struct {
			HourStart int64
			N         int64
		}
		err := hourCounts(db, f, p).Select("hour_start, SUM(n) AS n").Group("hour_start").
			Order("hour_start DESC").Scan(&hours).Error
		if err != nil {
			return 0, 0, err
		}
		for _, h := range hours {
			if skip < h.N {
				return min(bound, h.HourStart+3600), skip, nil
			}
			skip -= h.N
		}
		bound = p.from
	}
	return bound, skip, nil
}

// CountLogHours reads log_hour_counts: the tests compare it with the logs.
func (s *Store) CountLogHours(ctx context.Context) (map[[2]int64]int64, error) {
	var rows []struct {
		HourStart int64
		Type      int64
		N         int64
	}
	err := s.read(ctx).Table("log_hour_counts").Where("n <> 0").Scan(&rows).Error
	out := map[[2]int64]int64{}
	for _, r := range rows {
		out[[2]int64{r.HourStart, r.Type}] = r.N
	}
	return out, err
}
