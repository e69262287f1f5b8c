package store

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A database at 0017 with logs gets usage cubes equal to the sums over its
// consume logs (other types left out), per day and user, per day and
// channel and per hour; running the step again (MySQL commits DDL as it
// goes) does not add them twice.
func TestMigration0020RollsUpExistingLogs(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "m.db")}
			all := migrations
			migrations = slices.DeleteFunc(slices.Clone(all), func(m migration) bool { return m.version == "0020_usage_cubes" })
			s, err := Open(ctx, opts)
			migrations = all
			if err != nil {
				t.Fatal(err)
			}
			const day, hour = 86400, 3600
			err = s.db.Exec("INSERT INTO logs (id, user_id, username, token_name, created_at, type, model_name, channel_id, log_group, quota, prompt_tokens, completion_tokens) VALUES " +
				"(1, 7, 'ann', 'k', 100, 2, 'a', 1, 'g', 5, 1, 2), (2, 7, 'ann', 'k', 3700, 2, 'a', 1, 'g', 6, 3, 4), " +
				"(3, 8, 'ben', 'k', 300, 2, 'a', 2, 'g', 7, 5, 6), (4, 8, 'ben', 'k', 86400, 2, 'a', 1, 'h', 8, 7, 8), " +
				"(5, 8, 'ben', 'k', 400, 1, 'a', 1, 'g', 999, 0, 0), (6, 7, 'ann', 'k', 500, 5, 'a', 1, 'g', 0, 0, 0), " +
				"(7, 7, 'ann2', 'k', 600, 2, 'a', 1, 'g', 1, 1, 1), (8, 7, 'ann', 'k2', 700, 2, 'a', 1, 'g', 2, 2, 2)").Error
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			s, err = Open(ctx, opts)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			defer s.Close()
			type row struct {
				Start                                         int64
				UserID                                        int64
				Username, TokenName, ModelName                string
				ChannelID                                     int64
				Grp                                           string
				RequestCount, Quota, PromptTokens, Completion int64
			}
			read := func(c usageCube) []row {
				t.Helper()
				sel := c.startCol + " AS start, model_name, channel_id, request_count, quota, prompt_tokens, completion_tokens AS completion"
				if c.byUser {
					sel += ", user_id, username, token_name"
				}
				if c.byGroup {
					sel += ", log_group AS grp"
				}
				var rows []row
				if err := s.db.Table(c.table).Select(sel).Order(c.startCol).Scan(&rows).Error; err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(rows, func(a, b row) int {
					return compareKeys(cubeKey{a.Start, a.UserID, a.Username, a.TokenName, a.ModelName, a.ChannelID, a.Grp},
						cubeKey{b.Start, b.UserID, b.Username, b.TokenName, b.ModelName, b.ChannelID, b.Grp})
				})
				return rows
			}
			check := func(when string) {
				t.Helper()
				want := map[usageCube][]row{
					cubeDays: {{0, 7, "ann", "k", "a", 1, "g", 2, 11, 4, 6}, {0, 7, "ann", "k2", "a", 1, "g", 1, 2, 2, 2},
						{0, 7, "ann2", "k", "a", 1, "g", 1, 1, 1, 1}, {0, 8, "ben", "k", "a", 2, "g", 1, 7, 5, 6},
						{day, 8, "ben", "k", "a", 1, "h", 1, 8, 7, 8}},
					cubeDayChannels: {{0, 0, "", "", "a", 1, "g", 4, 14, 7, 9}, {0, 0, "", "", "a", 2, "g", 1, 7, 5, 6},
						{day, 0, "", "", "a", 1, "h", 1, 8, 7, 8}},
					cubeHourChans: {{0, 0, "", "", "a", 1, "g", 3, 8, 4, 5}, {0, 0, "", "", "a", 2, "g", 1, 7, 5, 6},
						{hour, 0, "", "", "a", 1, "g", 1, 6, 3, 4}, {day, 0, "", "", "a", 1, "h", 1, 8, 7, 8}},
				}
				for _, c := range usageCubes {
					if got := read(c); !slices.Equal(got, want[c]) {
						t.Errorf("%s: %s = %+v, want %+v", when, c.table, got, want[c])
					}
				}
				// Every type counted per hour.
				counts, err := s.CountLogHours(ctx)
				wantCounts := map[[2]int64]int64{{0, 2}: 4, {0, 1}: 1, {0, 5}: 1, {hour, 2}: 1, {day, 2}: 1}
				if err != nil || !maps.Equal(counts, wantCounts) {
					t.Errorf("%s: log_hour_counts = %v (%v), want %v", when, counts, err, wantCounts)
				}
			}
			check("after the upgrade")
			if err := migration0020(s.db); err != nil {
				t.Fatalf("step run again: %v", err)
			}
			check("after the step ran again")
		})
	}
}

// statPlan splits a stat's time range into whole days (from the day
// cubes), whole hours of the partial days (the hour cube, without a user
// filter) and the seconds left (the logs).
func TestStatPlan(t *testing.T) {
	const d, h = 86400, 3600
	days, dayCh, hours := &cubeDays, &cubeDayChannels, &cubeHourChans
	type p = statPart
	tests := []struct {
		name string
		f    LogFilter
		want []statPart
	}{
		{"open", LogFilter{}, []p{{dayCh, openLow, openHigh}}},
		{"open, by user", LogFilter{UserID: 3}, []p{{days, openLow, openHigh}}},
		{"whole days", LogFilter{Start: 10 * d, End: 12*d - 1}, []p{{dayCh, 10 * d, 12 * d}}},
		{"from a day on", LogFilter{Start: 10 * d}, []p{{dayCh, 10 * d, openHigh}}},
		{"until a day", LogFilter{End: 10*d - 1}, []p{{dayCh, openLow, 10 * d}}},
		{"hours at both ends", LogFilter{Start: 10*d - 2*h, End: 12*d + 3*h - 1},
			[]p{{dayCh, 10 * d, 12 * d}, {hours, 10*d - 2*h, 10 * d}, {hours, 12 * d, 12*d + 3*h}}},
		{"seconds at both ends", LogFilter{Start: 10*d - 2*h - 5, End: 12*d + 3*h + 6},
			[]p{{dayCh, 10 * d, 12 * d}, {hours, 10*d - 2*h, 10 * d}, {nil, 10*d - 2*h - 5, 10*d - 2*h},
				{hours, 12 * d, 12*d + 3*h}, {nil, 12*d + 3*h, 12*d + 3*h + 7}}},
		{"by user: partial days from the logs", LogFilter{Username: "a", Start: 10*d - 2*h, End: 12*d + 3*h - 1},
			[]p{{days, 10 * d, 12 * d}, {nil, 10*d - 2*h, 10 * d}, {nil, 12 * d, 12*d + 3*h}}},
		{"by key name: partial days from the logs", LogFilter{TokenName: "k", Start: 10*d - 2*h, End: 12*d + 3*h - 1},
			[]p{{days, 10 * d, 12 * d}, {nil, 10*d - 2*h, 10 * d}, {nil, 12 * d, 12*d + 3*h}}},
		{"by group", LogFilter{Group: "g", Start: 10*d - 2*h, End: 12*d + 3*h - 1},
			[]p{{dayCh, 10 * d, 12 * d}, {hours, 10*d - 2*h, 10 * d}, {hours, 12 * d, 12*d + 3*h}}},
		{"within an hour", LogFilter{Start: 10*d + 5, End: 10*d + 100}, []p{{nil, 10*d + 5, 10*d + 101}}},
		{"within a day", LogFilter{Start: 10*d + 5, End: 10*d + 2*h}, []p{{hours, 10*d + h, 10*d + 2*h},
			{nil, 10*d + 5, 10*d + h}, {nil, 10*d + 2*h, 10*d + 2*h + 1}}},
		{"across midnight, no whole day", LogFilter{Start: 10*d - h, End: 10*d + h - 1}, []p{{hours, 10*d - h, 10*d + h}}},
		{"one second", LogFilter{Start: 10 * d, End: 10 * d}, []p{{nil, 10 * d, 10*d + 1}}},
		{"end before start", LogFilter{Start: 10 * d, End: 10*d - 1}, nil},
		{"negative end", LogFilter{End: -5}, []p{{dayCh, openLow, -d}, {hours, -d, -h}, {nil, -h, -4}}},
		{"int64 limits", LogFilter{Start: -1 << 63, End: 1<<63 - 1}, []p{{dayCh, openLow, openHigh}}},
		{"start past all time", LogFilter{Start: 1<<63 - 1}, nil},
		{"end before all time", LogFilter{End: -1 << 63}, nil},
	}
	for _, tt := range tests {
		if got := statPlan(tt.f); !slices.Equal(got, tt.want) {
			t.Errorf("%s: statPlan(%+v) = %v, want %v", tt.name, tt.f, got, tt.want)
		}
	}
}
