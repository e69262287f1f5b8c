package store

import (
	"context"
	"database/sql"
	"errors"
	"math/bits"

	"github.com/ncruces/go-sqlite3"
)

// Every relayed call writes a consume log in its settlement's batch; on
// SQLite, binding the batch's arguments through database/sql cost about as
// much as a quarter of SQLite's own work on the rows: each value boxed
// into an interface, the array of NamedValues, database/sql's conversion
// of every argument and the driver's ClearBindings after each statement
// (docs/performance.md, "Seventh round"). The write transactions on SQLite
// all run on one connection (sqliteWriter), so the log INSERTs are prepared
// on that SQLite connection itself and bound value by value. The text is
// the one execRows would send (OR FAIL, chunks of a power of two rows up
// to maxCachedRows), so the database does exactly what it did before.

// directSizes is how many chunk sizes the writer keeps prepared: 1, 2,
// 4, … maxCachedRows rows.
var directSizes = bits.Len(uint(maxCachedRows))

// sqliteWriter is the connection every SQLite write transaction runs on
// (InTx), checked out of the pool for the store's whole life, with the log
// INSERTs prepared on it. No other goroutine ever holds that connection,
// and only the holder of the write slot (Store.writeGate) uses it, so the
// statements need no lock of their own. They are finalized by Close, on
// the writer, before it goes back to the pool: a SQLite connection cannot
// close while it has statements, and SQLite's connections must not be used
// from two goroutines at once, which finalizing statements of a pooled
// connection that a reader holds would do.
//
// database/sql discards a connection when an operation on it panics (Raw)
// or its driver reports it bad; the writer is then closed under the store
// (sql.ErrConnDone), and the next write checks out another (get).
type sqliteWriter struct {
	db   *sql.DB
	conn *sql.Conn
	// raw is the SQLite connection under conn, once a statement was
	// prepared on it: the lost writer's statements are finalized there.
	raw    *sqlite3.Conn
	stmts  []*sqlite3.Stmt // by log2 of the chunk's rows
	lost   bool            // database/sql discarded conn
	closed bool
}

// newSQLiteWriter checks the writer out of sqlDB.
func newSQLiteWriter(ctx context.Context, sqlDB *sql.DB) (*sqliteWriter, error) {
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &sqliteWriter{db: sqlDB, conn: conn, stmts: make([]*sqlite3.Stmt, directSizes)}, nil
}

// get returns the writer's connection for a write transaction, checking
// out a new one when database/sql discarded it; the caller holds the write
// slot.
func (w *sqliteWriter) get(ctx context.Context) (*sql.Conn, error) {
	if w.closed {
		return nil, errStoreClosed
	}
	if w.lost {
		_ = w.dropLost() // a leak at worst: the new connection is sound
		conn, err := w.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		w.conn, w.lost = conn, false
	}
	return w.conn, nil
}

// dropLost finalizes the statements of the connection database/sql
// discarded and closes it: database/sql's own close failed, as SQLite
// refuses to close a connection that has statements.
func (w *sqliteWriter) dropLost() error {
	err := w.finalize()
	if err == nil && w.raw != nil {
		err = w.raw.Close()
	}
	w.raw = nil
	return err
}

// stmt returns the statement inserting rows rows (a power of two, at most
// maxCachedRows) on c, the writer's SQLite connection, preparing it on
// first use. The caller holds the write slot.
func (w *sqliteWriter) stmt(c *sqlite3.Conn, rows int) (*sqlite3.Stmt, error) {
	if w.closed {
		return nil, errStoreClosed
	}
	w.raw = c
	i := bits.TrailingZeros(uint(rows))
	if w.stmts[i] == nil {
		st, _, err := c.PrepareFlags(rowsText(insertLogsSQLiteHead, logColumnCount, rows), sqlite3.PREPARE_PERSISTENT)
		if err != nil {
			return nil, err
		}
		w.stmts[i] = st
	}
	return w.stmts[i], nil
}

// finalize finalizes the prepared statements.
func (w *sqliteWriter) finalize() error {
	var errs []error
	for i, st := range w.stmts {
		if st != nil {
			errs = append(errs, st.Close())
			w.stmts[i] = nil
		}
	}
	return errors.Join(errs...)
}

// close finalizes the statements and gives the connection back to the
// pool; the caller holds the write slot. stmt fails from then on.
func (w *sqliteWriter) close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.lost {
		return w.dropLost()
	}
	return errors.Join(w.finalize(), w.conn.Close())
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

// insertLogsDirect writes rows through the writer's SQLite connection
// (Tx.conn), in the statements prepared there.
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
			st, err := tx.s.writer.stmt(c, size)
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
