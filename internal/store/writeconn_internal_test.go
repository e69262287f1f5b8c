package store

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A write transaction whose function panics rolls back and gives the write
// slot back: the next write goes through, on SQLite on the same writer
// connection (sqliteWriter).
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
		expectLogs(t, s, 1, "only the one written after the panics (theirs rolled back)")
	})
}

// A write whose context ends mid-transaction rolls back and leaves the
// store writing. database/sql discards a connection whose transaction's
// context ended; on SQLite that would be the writer, and every write after
// it would fail (runTx begins and commits without the cancellation).
func TestCancelledWriteLeavesTheStoreWriting(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		for range 3 {
			cctx, cancel := context.WithCancel(ctx)
			err := s.InTx(cctx, func(tx *Tx) error {
				if err := tx.InsertLogs([]Log{{UserID: 1, Type: LogConsume}}); err != nil {
					return err
				}
				cancel()
				// database/sql's watcher of the context acts first, as it
				// does when the cancellation lands mid-statement. With the
				// writer begun on ctx itself, the writer would be gone.
				time.Sleep(10 * time.Millisecond)
				return tx.InsertLogs([]Log{{UserID: 1, Type: LogConsume}})
			})
			cancel()
			if err == nil {
				t.Fatal("a write whose context ended mid-transaction committed")
			}
		}
		if err := s.InsertBatch(ctx, []Log{{UserID: 2, Type: LogConsume, RequestID: "after"}}); err != nil {
			t.Fatalf("a write after the cancelled ones: %v", err)
		}
		expectLogs(t, s, 1, "only the one written after the cancelled writes")
		if err := s.Close(); err != nil {
			t.Fatalf("close after cancelled writes: %v", err)
		}
	})
}

// A writer database/sql discarded (as it does when an operation on the
// connection panics) is replaced by the next write, and its statements are
// finalized, so the store still closes cleanly.
func TestDiscardedWriterIsReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSQLiteStore(t)
	if err := s.InsertBatch(ctx, []Log{{UserID: 1, Type: LogConsume}}); err != nil {
		t.Fatal(err)
	}
	old := s.writer.conn
	// What Raw does after its function panicked: the connection is bad.
	_ = old.Raw(func(any) error { return driver.ErrBadConn })
	if err := s.InsertBatch(ctx, []Log{{UserID: 2, Type: LogConsume}}); err != nil {
		t.Fatalf("a write after the writer was discarded: %v", err)
	}
	if s.writer.conn == old {
		t.Fatal("the discarded writer is still the store's")
	}
	expectLogs(t, s, 2, "both writes")
	if err := s.Close(); err != nil {
		t.Fatalf("close after the writer was replaced: %v", err)
	}
}

// Close finalizes the writer's statements while readers still run. The
// statements are the writer's alone, so no reader's connection is touched:
// when they were prepared on whichever pooled connection a write had
// checked out, Close finalized them on connections readers held (the race
// detector caught it in the cluster tests, whose background readers
// outlive the app's Close).
func TestCloseWhileReading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSQLiteStore(t)
	for n := 1; n <= maxCachedRows; n *= 2 { // a statement of every size
		if err := s.InsertBatch(ctx, make([]Log, n)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var n int64
				_ = s.db.Model(&Log{}).Where("user_id >= ?", 0).Count(&n).Error
				reads.Add(1)
			}
		})
	}
	for reads.Load() < 200 { // the readers have taken every pooled connection
		time.Sleep(time.Millisecond)
	}
	err := s.Close()
	close(stop)
	readers.Wait()
	if err != nil {
		t.Fatalf("close while reading: %v", err)
	}
}

// openSQLiteStore opens a store on a SQLite file of t's, closed when t
// ends (a second Close does nothing).
func openSQLiteStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{SQLitePath: filepath.Join(t.TempDir(), "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// expectLogs fails t unless the store holds n logs.
func expectLogs(t *testing.T, s *Store, n int64, what string) {
	t.Helper()
	var got int64
	if err := s.db.Model(&Log{}).Count(&got).Error; err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d logs, want %d: %s", got, n, what)
	}
}
