package store

import (
	"context"
	"testing"
	"time"
)

// A write transaction whose function panics gives its connection back: on
// SQLite each one checks a connection out of the pool of four (runTx), so
// five panics in a row would leave the next write waiting for ever.
func TestPanickedWriteGivesItsConnectionBack(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		for range 6 {
			func() {
				defer func() { _ = recover() }()
				_ = s.InTx(ctx, func(tx *Tx) error {
					if err := tx.InsertLogs([]Log{{UserID: 1, Type: LogConsume}}); err != nil {
						return err
					}
					panic("mid-transaction")
				})
			}()
		}
		wait, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := s.InsertBatch(wait, []Log{{UserID: 2, Type: LogConsume, RequestID: "after"}}); err != nil {
			t.Fatalf("a write after the panics: %v", err)
		}
		var n int64
		if err := s.db.Model(&Log{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%d logs, want only the one written after the panics (theirs rolled back)", n)
		}
	})
}
