package store

import (
	"context"
	"database/sql"
	"errors"
	"math/bits"
	"sync"

	"github.com/ncruces/go-sqlite3"
)

// Every relayed call writes a consume log in its settlement's batch; on
// SQLite, binding the batch's arguments through database/sql cost about as
// much as a quarter of SQLite's own work on the rows: each value boxed
// into an interface, the array of NamedValues, database/sql's conversion
// of every argument and the driver's ClearBindings after each statement
// (docs/performance.md, "Seventh round"). The write transactions on SQLite
// run on a connection of their own (InTx), so the log INSERTs are prepared
// on that SQLite connection itself and bound value by value. The text is
// the one execRows would send (OR FAIL, chunks of a power of two rows up
// to maxCachedRows), so the database does exactly what it did before.

// directSizes is how many chunk sizes a connection keeps prepared: 1, 2,
// 4, … maxCachedRows rows.
var directSizes = bits.Len(uint(maxCachedRows))

// directLogInserts holds the log INSERTs prepared on each SQLite
// connection. A connection cannot close while it has statements (SQLite's
// close fails with SQLITE_BUSY), so the store finalizes them before it
// closes its pool (close); database/sql closes SQLite connections only
// then (no lifetime is set, and the driver never reports a bad one).
type directLogInserts struct {
	mu     sync.Mutex
	closed bool
	stmts  map[*sqlite3.Conn][]*sqlite3.Stmt // by log2 of the chunk's rows
}

// stmt returns c's statement inserting rows rows (a power of two, at most
// maxCachedRows), preparing it on first use.
func (d *directLogInserts) stmt(c *sqlite3.Conn, rows int) (*sqlite3.Stmt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errStoreClosed
	}
	if d.stmts == nil {
		d.stmts = map[*sqlite3.Conn][]*sqlite3.Stmt{}
	}
	byRows := d.stmts[c]
	if byRows == nil {
		byRows = make([]*sqlite3.Stmt, directSizes)
		d.stmts[c] = byRows
	}
	i := bits.TrailingZeros(uint(rows))
	if byRows[i] == nil {
		st, _, err := c.PrepareFlags(rowsText(insertLogsSQLiteHead, logColumnCount, rows), sqlite3.PREPARE_PERSISTENT)
		if err != nil {
			return nil, err
		}
		byRows[i] = st
	}
	return byRows[i], nil
}

// close finalizes every statement; stmt fails from then on.
func (d *directLogInserts) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, byRows := range d.stmts {
		for _, st := range byRows {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
	}
	d.stmts = nil
	return errors.Join(errs...)
}

var errStoreClosed = errors.New("store closed")

// chunkRows is how many of n rows the next statement of execRows or
// insertLogsDirect writes on SQLite: the largest power of two within
// maxCachedRows and n, so a handful of prepared texts covers every batch.
func chunkRows(n int) int {
	size := min(n, maxCachedRows)
	for size&(size-1) != 0 {
		size &= size - 1
	}
	return size
}

// insertLogsDirect writes rows through the transaction's own SQLite
// connection (Tx.conn), in the statements directLogInserts prepared there.
func (tx *Tx) insertLogsDirect(rows []Log) error {
	ctx := tx.context()
	return tx.conn.Raw(func(driverConn any) error {
		raw, ok := driverConn.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return errors.New("insert logs: the SQLite driver's connection gives no raw connection")
		}
		c := raw.Raw()
		if old := c.SetInterrupt(ctx); old != ctx {
			defer c.SetInterrupt(old)
		}
		for from := 0; from < len(rows); {
			size := chunkRows(len(rows) - from)
			st, err := tx.s.directLogs.stmt(c, size)
			if err != nil {
				return err
			}
			for i := range size {
				if err := bindLog(st, i*logColumnCount+1, &rows[from+i]); err != nil {
					return err
				}
			}
			tx.s.roundTrips.n.Add(1)
			if err := st.Exec(); err != nil {
				return err
			}
			from += size
		}
		return nil
	})
}

// bindLog binds l's columns to st's parameters from first on, in
// logFields' order. A bound text stays until the next bind replaces it:
// at most one chunk's texts per prepared statement.
func bindLog(st *sqlite3.Stmt, first int, l *Log) error {
	for i := range logFields {
		var err error
		switch f := &logFields[i]; {
		case f.i64 != nil:
			err = st.BindInt64(first+i, f.i64(l))
		case f.str != nil:
			err = st.BindText(first+i, f.str(l))
		default:
			err = st.BindBool(first+i, f.flag(l))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeConn checks out the connection a SQLite write transaction runs on,
// so that the transaction can reach the driver's connection (Tx.conn); nil
// on the server databases.
func (s *Store) writeConn(ctx context.Context) (*sql.Conn, error) {
	if s.dialect != SQLite {
		return nil, nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	return sqlDB.Conn(ctx)
}
