package store

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"
)

// The seed loader's rollups, summed in memory and written per day, equal
// the rollups rebuilt from the logs it wrote (0013's and 0020's).
func TestLogLoaderRollsUpLikeARebuild(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		l := s.NewLogLoader()
		for b := range 3 {
			var rows []Log
			for i := range 1500 {
				k := b*1500 + i
				rows = append(rows, Log{UserID: int64(k%7 + 1), Username: fmt.Sprint("u", k%7), TokenName: fmt.Sprint("k", k%2),
					CreatedAt: 1_000_000 + int64(k)*60, Type: LogConsume, ModelName: fmt.Sprint("m", k%3), ChannelID: int64(k % 4),
					Group: fmt.Sprint("g", k%2), Quota: int64(k), PromptTokens: 2, CompletionTokens: 3})
			}
			if err := l.Load(ctx, rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		tables := []string{"usage_day_models", "usage_day_users"}
		for _, c := range usageCubes {
			tables = append(tables, c.table)
		}
		read := func() map[string]string {
			out := map[string]string{}
			for _, table := range tables {
				rows, err := s.db.Table(table).Rows()
				if err != nil {
					t.Fatal(err)
				}
				cols, _ := rows.Columns()
				n := 0
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					key := fmt.Sprint(table, vals[:len(vals)-4])
					if table == "usage_day_users" {
						key = fmt.Sprint(table, vals[:2])
					}
					out[key] = fmt.Sprint(vals)
					n++
				}
				rows.Close()
				if n == 0 {
					t.Fatalf("%s is empty", table)
				}
			}
			return out
		}
		loaded := read()
		for _, table := range tables {
			if err := s.db.Exec("DELETE FROM " + table).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := rebuildRollups(s.db, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := rebuildCubes(s.db, usageCubes, 0, 0); err != nil {
			t.Fatal(err)
		}
		if rebuilt := read(); !maps.Equal(loaded, rebuilt) {
			t.Fatalf("loaded rollups %v\nrebuilt %v", loaded, rebuilt)
		}
	})
}

// The stats' and lists' read transactions take no write lock on SQLite
// (whose DSN makes every other transaction IMMEDIATE): a log batch commits
// while one is open.
func TestReadTxDoesNotBlockWriters(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{SQLitePath: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.readTx(ctx, func(db *gorm.DB) error {
		var n int64
		if err := db.Raw("SELECT COUNT(*) FROM usage_days").Scan(&n).Error; err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return s.InsertBatch(wctx, []Log{{UserID: 1, Type: LogConsume, ModelName: "m", Quota: 1, CreatedAt: 100}})
	})
	if err != nil {
		t.Fatalf("a write during a read transaction: %v", err)
	}
}
