package store

import (
	"context"
	"slices"
	"testing"
)

// The rebuilds read the consume logs of [from, to) in batches that follow
// (created_at, id): every such log exactly once, none of another type or
// time, also when a second holds more logs than a batch and ids do not
// follow time (ids from different nodes, an import). The type-only index
// is gone (migration 0035); the (type, created_at) one serves.
func TestConsumeLogBatchesReadEachLogOnce(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		m := s.db.Migrator()
		if m.HasIndex(&v35Log{}, "idx_logs_type") {
			t.Fatal("idx_logs_type is still there after migration 0035")
		}
		if !m.HasIndex(&v7Log{}, "idx_log_type_time") {
			t.Fatal("idx_log_type_time is missing")
		}
		var rows []Log
		var want []int64
		id := int64(1000)
		for _, sec := range []int64{5, 10, 10, 10, 10, 10, 10, 10, 11, 12, 12, 12, 19, 20, 20} {
			id -= 7 // ids fall as time rises
			for _, typ := range []int{LogConsume, LogTopup, LogError} {
				id--
				rows = append(rows, Log{ID: id, UserID: 1, CreatedAt: sec, Type: typ})
				if typ == LogConsume && sec >= 10 && sec < 20 {
					want = append(want, id)
				}
			}
		}
		if err := s.write(ctx, "insert logs", func(tx *Tx) error { return tx.insertLogRows(rows) }); err != nil {
			t.Fatal(err)
		}
		// want in (created_at, id) order: ids fall within a second too.
		byTime := map[int64]int64{}
		for _, r := range rows {
			byTime[r.ID] = r.CreatedAt
		}
		slices.SortFunc(want, func(a, b int64) int {
			if byTime[a] != byTime[b] {
				return int(byTime[a] - byTime[b])
			}
			return int(a - b)
		})
		for _, batch := range []int{1, 2, 3, 7, 100} {
			var got []int64
			calls := 0
			err := eachConsumeLogBatch(s.db.WithContext(ctx), "id, created_at, type", 10, 20, batch, func(b []Log) error {
				calls++
				if len(b) > batch {
					t.Fatalf("batch of %d rows, want at most %d", len(b), batch)
				}
				for _, l := range b {
					if l.Type != LogConsume {
						t.Fatalf("log %d of type %d handed to a consume rebuild", l.ID, l.Type)
					}
					got = append(got, l.ID)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("batch %d: read %v, want %v", batch, got, want)
			}
			if wantCalls := len(want)/batch + 1; calls != wantCalls {
				t.Fatalf("batch %d: %d queries, want %d", batch, calls, wantCalls)
			}
		}
	})
}
