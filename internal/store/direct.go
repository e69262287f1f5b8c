package store

import (
	"context"
	"database/sql"
)

// Direct statements: the settlement path's big writes (the consume logs and
// the settlement keys of a group commit) go straight to the transaction's
// connection. GORM scans a statement's text for placeholders and rebinds
// every argument; for a commit of a hundred logs (2,600 arguments) that
// cost more CPU and garbage than the database driver's own work
// (docs/performance.md). The statement must carry its dialect's
// placeholders: ? on SQLite and MySQL, $n on PostgreSQL.

// execDirect runs a statement that returns no rows.
func (tx *Tx) execDirect(q string, args ...any) (sql.Result, error) {
	tx.s.roundTrips.n.Add(1)
	return tx.db.Statement.ConnPool.ExecContext(tx.context(), q, args...)
}

// queryDirect runs a statement that returns rows.
func (tx *Tx) queryDirect(q string, args ...any) (*sql.Rows, error) {
	tx.s.roundTrips.n.Add(1)
	return tx.db.Statement.ConnPool.QueryContext(tx.context(), q, args...)
}

// execRows sends n rows as plain multi-row INSERTs of at most 200 rows:
// head is "INSERT INTO table (columns) VALUES ", width the arguments of a
// row, and appendRow appends row i's arguments to args. On SQLite the
// chunks are of a power of two rows up to maxCachedRows, each a prepared
// statement reused from commit to commit (stmtcache.go).
func (tx *Tx) execRows(head string, width, n int, appendRow func(args []any, i int) []any) error {
	c, sqlTx := cacheOf(tx.db)
	for from := 0; from < n; {
		size := min(n-from, 200)
		if c != nil {
			size = chunkRows(n - from)
		}
		to := from + size
		q := rowsText(head, width, size)
		args := make([]any, 0, size*width)
		for i := from; i < to; i++ {
			args = appendRow(args, i)
		}
		done, err := c.exec(tx.context(), sqlTx, q, args)
		if !done {
			_, err = tx.execDirect(q, args...)
		}
		if err != nil {
			return err
		}
		from = to
	}
	return nil
}

func (tx *Tx) context() context.Context {
	if ctx := tx.db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}
