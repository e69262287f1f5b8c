package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// Prepared statements of the settlement path on SQLite. A group commit
// writes its consume logs, rollups and cubes in statements whose text
// repeats from commit to commit; SQLite parsed each one anew, which cost
// about a third of the CPU of a log insert (BenchmarkInsertLogs, profile in
// docs/performance.md, issue 32). The statements of those writes are now
// prepared once per connection and reused: database/sql keeps a statement
// prepared on the pool (sql.DB.Prepare) on every connection it was used
// on, and Tx.StmtContext reuses the transaction's connection's. Server
// databases are left as they were: a prepared statement is a round trip of
// its own there (MySQL with interpolateParams), and PostgreSQL writes the
// logs in one statement already.

// maxCachedStmts bounds the texts kept prepared per store; a text past it
// runs unprepared, as before.
const maxCachedStmts = 64

// maxCachedRows bounds the rows of a cached multi-row statement: execRows
// sends chunks of a power of two rows up to it on SQLite, so a handful of
// texts cover every batch size; a cube or count upsert of more rows runs
// unprepared. A prepared statement's program grows with its parameters.
const maxCachedRows = 64

type stmtCache struct {
	db *sql.DB
	rt *roundTripCounter

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// stmtCaches holds the statement cache of each SQLite store, by its pool
// (gorm.Config.ConnPool of every session of the store).
var stmtCaches sync.Map // *sql.DB → *stmtCache

func (s *Store) startStmtCache(sqlDB *sql.DB) {
	if s.dialect == SQLite {
		stmtCaches.Store(sqlDB, &stmtCache{db: sqlDB, rt: &s.roundTrips, stmts: map[string]*sql.Stmt{}})
	}
}

func stopStmtCache(sqlDB *sql.DB) { stmtCaches.Delete(sqlDB) } // the pool's Close closes the statements

// cacheOf returns db's statement cache and the transaction db runs in; nil
// outside a transaction or on a server database.
func cacheOf(db *gorm.DB) (*stmtCache, *sql.Tx) {
	pool, ok := db.Config.ConnPool.(*sql.DB)
	if !ok {
		return nil, nil
	}
	c, ok := stmtCaches.Load(pool)
	if !ok {
		return nil, nil
	}
	tx, ok := db.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return nil, nil
	}
	return c.(*stmtCache), tx
}

// get returns the prepared statement of q, preparing it on first use; nil
// when the cache is full or the preparation failed (the caller runs q
// unprepared, which reports the error if there is one).
func (c *stmtCache) get(ctx context.Context, q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[q]; ok {
		return st
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.stmts[q] = st
	return st
}

// exec runs q prepared in tx; done is false when c (which may be nil) has
// no statement for it, and nothing ran.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, q string, args []any) (done bool, err error) {
	if c == nil {
		return false, nil
	}
	st := c.get(ctx, q)
	if st == nil {
		return false, nil
	}
	c.rt.n.Add(1)
	_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	return true, err
}

// execStmt runs q (? placeholders, plain arguments) in db's transaction,
// prepared once when db's store caches statements, else through gorm.
// rows is how many rows q writes, for maxCachedRows.
func execStmt(db *gorm.DB, rows int, q string, args ...any) error {
	if rows <= maxCachedRows {
		if c, tx := cacheOf(db); c != nil {
			ctx := db.Statement.Context
			if ctx == nil {
				ctx = context.Background()
			}
			if done, err := c.exec(ctx, tx, q, args); done {
				return err
			}
		}
	}
	return db.Exec(q, args...).Error
}

// rowsText returns head followed by n rows of width placeholders.
func rowsText(head string, width, n int) string {
	row := "(?" + strings.Repeat(", ?", width-1) + ")"
	var q strings.Builder
	q.Grow(len(head) + n*(len(row)+2))
	q.WriteString(head)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
	}
	return q.String()
}
