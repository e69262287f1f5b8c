package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// The usage cubes (migration 0020) are finer rollups of the consume logs
// than those of 0013, for the user dashboard and the log stats
// (docs/decisions/logs.md, "Rollups and retention"):
//
//   - usage_days: per UTC day, user (id and the username the log carries),
//     key name, model, channel and group; read with a user, username, key
//     name or group filter;
//   - usage_day_channels: per UTC day, model, channel and group; read
//     without a user, username or key name filter;
//   - usage_hour_channels: per UTC hour, model, channel and group; the
//     partial days of a time range that is not aligned to days.
//
// Like the 0013 rollups they are exact: InsertLogs (and a replica applying
// a peer's log) adds every consume log in the log's own transaction, and
// DeleteLogsBefore recomputes the buckets it cut. The retention sweep
// (DeleteLogsForRetention) deletes logs and keeps every rollup: dashboards
// of past months survive retention.

// usageCube is one rollup table of consume logs.
type usageCube struct {
	table    string
	bucket   int64  // seconds: 86400 or 3600
	startCol string // day_start or hour_start
	byUser   bool   // keyed also by user_id, username and token_name
	byGroup  bool   // keyed also by log_group
}

var (
	cubeDays        = usageCube{"usage_days", 86400, "day_start", true, true}
	cubeDayChannels = usageCube{"usage_day_channels", 86400, "day_start", false, true}
	cubeHourChans   = usageCube{"usage_hour_channels", 3600, "hour_start", false, true}
	usageCubes      = []usageCube{cubeDays, cubeDayChannels, cubeHourChans}
)

// keyCols are the cube's primary key columns, in key order.
func (c usageCube) keyCols() []string {
	cols := []string{c.startCol}
	if c.byUser {
		cols = append(cols, "user_id", "username", "token_name")
	}
	cols = append(cols, "model_name", "channel_id")
	if c.byGroup {
		cols = append(cols, "log_group")
	}
	return cols
}

var cubeSumCols = []string{"request_count", "quota", "prompt_tokens", "completion_tokens"}

// cubeKey is a row's key; the fields a cube is not keyed by stay zero.
type cubeKey struct {
	Start     int64
	UserID    int64
	Username  string
	TokenName string
	ModelName string
	ChannelID int64
	Group     string
}

// args are the key's values in the order of c.keyCols.
func (k cubeKey) args(c usageCube) []any {
	args := []any{k.Start}
	if c.byUser {
		args = append(args, k.UserID, k.Username, k.TokenName)
	}
	args = append(args, k.ModelName, k.ChannelID)
	if c.byGroup {
		args = append(args, k.Group)
	}
	return args
}

func compareKeys(a, b cubeKey) int {
	return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.UserID, b.UserID),
		cmp.Compare(a.Username, b.Username), cmp.Compare(a.TokenName, b.TokenName),
		cmp.Compare(a.ModelName, b.ModelName), cmp.Compare(a.ChannelID, b.ChannelID), cmp.Compare(a.Group, b.Group))
}

// cubeSums are a row's sums, clamped within ±rollupMax as the 0013 rollups.
type cubeSums struct{ RequestCount, Quota, PromptTokens, CompletionTokens int64 }

// floorTo is the start of the bucket of size b holding t (t may be
// negative).
func floorTo(t, b int64) int64 {
	d := t - t%b
	if t < 0 && t%b != 0 {
		d -= b
	}
	return d
}

// cubeSet is consume logs summed into every cube.
type cubeSet struct {
	cubes []usageCube
	rows  []map[cubeKey]*cubeSums
	n     int // rows held, over all cubes
}

func newCubeSet(cubes []usageCube) *cubeSet {
	s := &cubeSet{cubes: cubes, rows: make([]map[cubeKey]*cubeSums, len(cubes))}
	for i := range s.rows {
		s.rows[i] = map[cubeKey]*cubeSums{}
	}
	return s
}

// add sums l in when it is a consume log.
func (s *cubeSet) add(l *Log) {
	if l.Type != LogConsume {
		return
	}
	clamp := func(v int64) int64 { return max(min(v, rollupMax), -rollupMax) }
	for i, c := range s.cubes {
		k := cubeKey{Start: floorTo(l.CreatedAt, c.bucket), ModelName: l.ModelName, ChannelID: l.ChannelID}
		if c.byUser {
			k.UserID, k.Username, k.TokenName = l.UserID, l.Username, l.TokenName
		}
		if c.byGroup {
			k.Group = l.Group
		}
		r := s.rows[i][k]
		if r == nil {
			r = &cubeSums{}
			s.rows[i][k] = r
			s.n++
		}
		r.RequestCount = clampAdd(r.RequestCount, 1)
		r.Quota = clampAdd(r.Quota, clamp(l.Quota))
		r.PromptTokens = clampAdd(r.PromptTokens, clamp(l.PromptTokens))
		r.CompletionTokens = clampAdd(r.CompletionTokens, clamp(l.CompletionTokens))
	}
}

// cubeChunk bounds the rows of one multi-row upsert: at most 11 columns a
// row, well under every engine's limit of bound parameters.
const cubeChunk = 500

// write adds the sums to the cube tables (multi-row upserts, keys in sorted
// order so concurrent transactions lock rows in one order) and empties the
// set.
func (s *cubeSet) write(db *gorm.DB) error {
	for i, c := range s.cubes {
		keys := make([]cubeKey, 0, len(s.rows[i]))
		for k := range s.rows[i] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareKeys)
		for len(keys) > 0 {
			n := min(len(keys), cubeChunk)
			if err := upsertCube(db, c, keys[:n], s.rows[i]); err != nil {
				return fmt.Errorf("%s: %w", c.table, err)
			}
			keys = keys[n:]
		}
		s.rows[i] = map[cubeKey]*cubeSums{}
	}
	s.n = 0
	return nil
}

// upsertCube inserts the rows of keys, adding to rows that exist, each sum
// clamped within ±rollupMax in SQL (no bound parameter takes part, so no
// engine has to guess a parameter's type).
func upsertCube(db *gorm.DB, c usageCube, keys []cubeKey, sums map[cubeKey]*cubeSums) error {
	mysql := db.Dialector.Name() == "mysql"
	cols := append(c.keyCols(), cubeSumCols...)
	row := "(?" + strings.Repeat(", ?", len(cols)-1) + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO " + c.table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	args := make([]any, 0, len(keys)*len(cols))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
		v := sums[k]
		args = append(append(args, k.args(c)...), v.RequestCount, v.Quota, v.PromptTokens, v.CompletionTokens)
	}
	if mysql {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
	} else {
		b.WriteString(" ON CONFLICT (" + strings.Join(c.keyCols(), ", ") + ") DO UPDATE SET ")
	}
	for i, col := range cubeSumCols {
		old, add := c.table+"."+col, "excluded."+col
		if mysql {
			add = "VALUES(" + col + ")"
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%[1]s = CASE WHEN %[3]s > 0 AND %[2]s > %[4]d - %[3]s THEN %[4]d "+
			"WHEN %[3]s < 0 AND %[2]s < -%[4]d - %[3]s THEN -%[4]d ELSE %[2]s + %[3]s END", col, old, add, rollupMax)
	}
	return execStmt(db, len(keys), b.String(), args...)
}

// cutCubes is the cubes' (and log_hour_counts') side of deleting every log
// created before ts: the buckets wholly before ts go, and the bucket holding
// ts (when ts is not its first second) is recomputed from the logs left.
func cutCubes(db *gorm.DB, ts int64) error {
	for _, c := range usageCubes {
		if err := db.Exec("DELETE FROM "+c.table+" WHERE "+c.startCol+" < ?", ts).Error; err != nil {
			return err
		}
		if start := floorTo(ts, c.bucket); start < ts {
			if err := rebuildCubes(db, []usageCube{c}, start, start+c.bucket); err != nil {
				return err
			}
		}
	}
	if err := db.Exec("DELETE FROM log_hour_counts WHERE hour_start < ?", ts).Error; err != nil {
		return err
	}
	if start := floorTo(ts, 3600); start < ts {
		return recountLogHours(db, start, start+3600)
	}
	return nil
}

// cubeFlushRows is how many cube rows a rebuild holds before adding them to
// the tables: the upserts add, so flushing early changes nothing but memory.
const cubeFlushRows = 200000

// rebuildCubes adds the consume logs created in [from, to) (to = 0: no end)
// to cubes, whose rows for those buckets must not exist.
func rebuildCubes(db *gorm.DB, cubes []usageCube, from, to int64) error {
	set := newCubeSet(cubes)
	err := eachConsumeLogBatch(db, "id, user_id, created_at, type, username, token_name, model_name, channel_id, log_group, "+
		"quota, prompt_tokens, completion_tokens", from, to, rebuildBatch, func(rows []Log) error {
		for i := range rows {
			set.add(&rows[i])
		}
		if set.n >= cubeFlushRows {
			return set.write(db)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return set.write(db)
}
