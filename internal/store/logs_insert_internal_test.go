package store

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// The hand-written log INSERT writes every field of Log: a field added to
// Log but not to logFields fails here, on every engine.
func TestInsertLogRowsWritesEveryField(t *testing.T) {
	if n := reflect.TypeFor[Log]().NumField(); n != logColumnCount {
		t.Fatalf("Log has %d fields, the log INSERT writes %d: add the new ones to logFields", n, logColumnCount)
	}
	if n := len(logArrays(nil)); n != logColumnCount {
		t.Fatalf("logArrays gives %d columns, the log INSERT writes %d", n, logColumnCount)
	}
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		// Every field distinct and non-zero, so a swapped or missing
		// column shows.
		want := Log{UserID: 2, CreatedAt: 3, Type: LogConsume, Content: "content", Username: "user", TokenName: "key",
			TokenID: 4, ModelName: "model", Group: "group", Quota: 5, PromptTokens: 6, CompletionTokens: 7,
			CachedTokens: 8, CacheWriteTokens: 9, CacheWrite1hTokens: 10, ChannelID: 11, RequestID: "request",
			ElapsedTime: 12, IsStream: true, BillingSource: 1, PlanID: 13, SessionKey: "session", Status: 14,
			ErrorCode: "code", UpstreamMessage: "message"}
		rows := []Log{want, want}
		rows[1].RequestID = "second"
		if err := s.InsertBatch(ctx, rows); err != nil {
			t.Fatal(err)
		}
		var got []Log
		if err := s.db.Order("id").Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID == 0 || got[1].RequestID != "second" {
			t.Fatalf("read back %+v", got)
		}
		want.ID = got[0].ID
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("read back\n%+v\nwant\n%+v", got[0], want)
		}
	})
}

// A log INSERT that fails on a later row leaves none of its rows: on SQLite
// the statement is OR FAIL (no statement journal), so the rows before the
// failing one are undone by the transaction's rollback, on every engine.
func TestFailedLogInsertLeavesNoRow(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.InsertBatch(ctx, []Log{{UserID: 1, Type: LogConsume, RequestID: "kept"}}); err != nil {
			t.Fatal(err)
		}
		var kept Log
		if err := s.db.Where("request_id = ?", "kept").First(&kept).Error; err != nil {
			t.Fatal(err)
		}
		// Many rows (a multi-row statement that touches many pages),
		// the last one colliding with the kept log's id.
		rows := make([]Log, 60)
		for i := range rows {
			rows[i] = Log{ID: kept.ID + int64(i+1)*idStride, UserID: 2, CreatedAt: 1, Type: LogConsume, RequestID: "lost", Content: strings.Repeat("x", 500)}
		}
		rows[len(rows)-1].ID = kept.ID
		err := s.write(ctx, "insert logs", func(tx *Tx) error { return tx.insertLogRows(rows) })
		if err == nil {
			t.Fatal("a log insert with a duplicate id succeeded")
		}
		var n int64
		if err := s.db.Model(&Log{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%d logs after the failed insert, want only the kept one", n)
		}
	})
}

// Batches of every chunking (one row, a chunk and one more, several
// chunks) read back field for field, on every engine; on SQLite they went
// through the statements prepared on the connection (logs_sqlite.go), and
// the store still closes cleanly (SQLite refuses to close a connection
// with statements left).
func TestLogBatchesReadBackEveryRow(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		var written []Log
		for b, n := range []int{1, 3, 64, 65, 100} {
			rows := make([]Log, n)
			for i := range rows {
				v := int64(b*1000 + i + 1)
				rows[i] = Log{UserID: v, CreatedAt: v, Type: LogConsume, Content: "content " + strings.Repeat("é", i%7),
					Username: "user", TokenName: "key", TokenID: v, ModelName: "model", Group: "group", Quota: v * 3,
					PromptTokens: v, CompletionTokens: v + 1, CachedTokens: v + 2, CacheWriteTokens: v + 3,
					CacheWrite1hTokens: v + 4, ChannelID: v + 5, RequestID: "r" + strings.Repeat("x", i%5), ElapsedTime: v + 6,
					IsStream: i%2 == 0, BillingSource: i % 2, PlanID: v + 7, SessionKey: "s", Status: i % 3, ErrorCode: "",
					UpstreamMessage: strings.Repeat("m", i%3)}
			}
			if err := s.InsertBatch(ctx, rows); err != nil {
				t.Fatal(err)
			}
			written = append(written, rows...)
		}
		var got []Log
		if err := s.db.Order("user_id").Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		if len(got) != len(written) {
			t.Fatalf("read back %d logs, wrote %d", len(got), len(written))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], written[i]) {
				t.Fatalf("log %d read back\n%+v\nwritten\n%+v", i, got[i], written[i])
			}
		}
		if s.dialect == SQLite {
			prepared := 0
			for _, st := range s.writer.stmts {
				if st != nil {
					prepared++
				}
			}
			if prepared < 3 { // 1, 64 and 32 rows at least
				t.Fatalf("%d statements prepared on the writer: the batches did not go through them", prepared)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close after the direct inserts: %v", err)
			}
		}
	})
}
