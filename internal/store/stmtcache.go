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

	// The background preparations (get): stop cancels them and waits, so
	// none touches the database after the store closed it.
	ctx       context.Context
	cancel    func()
	preparing sync.WaitGroup
}

// stmtCaches holds the statement cache of each SQLite store, by its pool
// (gorm.Config.ConnPool of every session of the store).
var stmtCaches sync.Map // *sql.DB → *stmtCache

func (s *Store) startStmtCache(sqlDB *sql.DB) {
	if s.dialect == SQLite {
		ctx, cancel := context.WithCancel(context.Background())
		stmtCaches.Store(sqlDB, &stmtCache{db: sqlDB, rt: &s.roundTrips, stmts: map[string]*sql.Stmt{}, ctx: ctx, cancel: cancel})
	}
}

// stopStmtCache ends the cache of a pool about to close; the pool's Close
// closes the statements.
func stopStmtCache(sqlDB *sql.DB) {
	if c, ok := stmtCaches.LoadAndDelete(sqlDB); ok {
		c := c.(*stmtCache)
		c.mu.Lock()
		c.cancel()
		c.mu.Unlock()
		c.preparing.Wait()
	}
}

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

// get returns the prepared statement of q; nil when it is not prepared
// yet, the cache is full or the preparation failed (the caller runs q
// unprepared, which reports the error if there is one).
//
// A text's first use starts its preparation in the background instead of
// waiting for it: preparing on the pool takes a connection of its own, and
// the caller holds the write transaction's. Waiting for a second
// connection while holding the write lock could deadlock the pool of four
// until SQLite's busy timeout failed the transactions queued behind it
// (each holds a connection while it waits for the lock). In the
// background the preparation just waits for a free connection; Tx.Stmt
// later re-prepares it on the transaction's own connection.
func (c *stmtCache) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[q]; ok {
		return st // nil while it is being prepared or when that failed
	}
	if len(c.stmts) >= maxCachedStmts || c.ctx.Err() != nil {
		return nil
	}
	c.stmts[q] = nil
	c.preparing.Add(1)
	go c.prepare(q)
	return nil
}

// prepare prepares q on the pool for get; a failure leaves q unprepared
// for good (it runs as before).
func (c *stmtCache) prepare(q string) {
	defer c.preparing.Done()
	st, err := c.db.PrepareContext(c.ctx, q)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts[q] = st
}

// exec runs q prepared in tx; done is false when c (which may be nil) has
// no statement for it, and nothing ran.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, q string, args []any) (done bool, err error) {
	if c == nil {
		return false, nil
	}
	st := c.get(q)
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
