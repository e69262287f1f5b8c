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

func (tx *Tx) context() context.Context {
	if ctx := tx.db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}
