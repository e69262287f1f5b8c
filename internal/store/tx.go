package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Tx is a transaction. Store methods that take a *Tx compose inside one
// transaction; InTx and write hand it out.
type Tx struct {
	db *gorm.DB
	s  *Store
	// conn is the writer connection a SQLite write transaction runs on
	// (InTx), for the statements it sends past database/sql
	// (logs_sqlite.go); nil on the server databases.
	conn    *sql.Conn
	changes []Change // for the after-commit listeners
	// outsideLedger marks a settlement applied by someone other than the
	// billing ledger (a dead-letter replay): its balance changes are
	// recorded as ordinary counter changes, so a local ledger re-reads them.
	outsideLedger bool
	// remote marks a transaction applying a peer's events: its changes
	// are told to the listeners but never written to the outbox.
	remote bool
	// outbox collects the changes to write as events at commit.
	outbox []Change
	// config is set when the transaction changed configuration: it bumps
	// the config version before it commits (config_state.go).
	config        bool
	configAll     bool // too many rows changed to list (a snapshot)
	configChanges []Change
	configVersion int64
}

// InTx runs fn in one write transaction: it commits when fn returns nil and
// rolls back otherwise. A transaction the database aborted as a deadlock
// victim or serialization failure is run again (fn must not have effects
// outside the transaction), up to maxTxAttempts times.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	if err := s.enterWriteGate(ctx); err != nil {
		return err
	}
	defer s.leaveWriteGate()
	for attempt := 1; ; attempt++ {
		tx, err := s.runTx(ctx, fn)
		if err == nil {
			s.notifyCommitted(tx.changes)
			s.notifyConfig(tx)
		}
		if err == nil || attempt == maxTxAttempts || !isRetryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
}

// runTx is one attempt of InTx. On SQLite it runs on the store's writer
// connection (sqliteWriter). Its BEGIN and COMMIT see ctx without its
// cancellation: database/sql discards a connection whose transaction's
// context ends (the driver cannot tell it is still sound), which would
// take the writer from under its statements. The statements in between
// run with ctx, so a cancelled ctx still interrupts them, and the
// transaction then rolls back on the writer as after any error.
func (s *Store) runTx(ctx context.Context, fn func(tx *Tx) error) (*Tx, error) {
	var conn *sql.Conn
	var db *gorm.DB
	if s.writer == nil {
		db = s.db.WithContext(ctx)
	} else {
		var err error
		if conn, err = s.writer.get(ctx); err != nil {
			return nil, err
		}
		db = s.db.WithContext(context.WithoutCancel(ctx))
		db.Statement.ConnPool = conn
	}
	var tx *Tx
	err := s.transaction(db, func(db *gorm.DB) error {
		// db's Statement is the transaction's own (Begin cloned it).
		db.Statement.Context = ctx
		tx = &Tx{db: db, s: s, conn: conn}
		if err := fn(tx); err != nil {
			return err
		}
		if tx.config {
			if err := tx.bumpConfigVersion(); err != nil {
				return fmt.Errorf("bump config version: %w", err)
			}
		}
		return tx.flushOutbox()
	})
	if conn != nil && errors.Is(err, sql.ErrConnDone) {
		s.writer.lost = true // InTx tries again, on a new writer
	}
	return tx, err
}

const maxTxAttempts = 5

// enterWriteGate waits for SQLite's one writer slot (no wait on other
// engines); leaveWriteGate gives it back.
func (s *Store) enterWriteGate(ctx context.Context) error {
	if s.writeGate == nil {
		return nil
	}
	select {
	case s.writeGate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) leaveWriteGate() {
	if s.writeGate != nil {
		<-s.writeGate
	}
}

// isRetryable recognises a transaction the database rolled back to break a
// deadlock or a serialization conflict.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	var myErr *mysqldriver.MySQLError
	switch {
	case errors.Is(err, sql.ErrConnDone):
		// SQLite's writer connection was discarded (sqliteWriter): the
		// transaction did not commit, and the next attempt runs on a new
		// one.
		return true
	case errors.As(err, &pgErr):
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	case errors.As(err, &myErr):
		return myErr.Number == 1213 || myErr.Number == 1205
	}
	return false
}

// write is InTx for the store's own mutating methods, naming the operation
// in the error.
func (s *Store) write(ctx context.Context, op string, fn func(tx *Tx) error) error {
	if err := s.InTx(ctx, fn); err != nil {
		return wrap(op, err)
	}
	return nil
}

// flushOutbox hands the transaction's changes to the outbox, just before
// commit: the events commit with the data or not at all.
func (tx *Tx) flushOutbox() error {
	if len(tx.outbox) == 0 {
		return nil
	}
	changes := tx.outbox
	tx.outbox = nil
	return tx.s.outbox(tx, changes)
}

// counterDelta is column → amount added by one change.
type counterDelta map[string]int64

// changed records a row change of a replicated table; every mutating method
// calls it inside its transaction. In cluster mode the row becomes an
// event at commit (internal/cluster/replica, docs/cluster.md).
func (tx *Tx) changed(table, op string, id int64) error {
	return tx.record(Change{Table: table, Op: op, ID: id})
}

// changedKey records a change of a row keyed by name (options).
func (tx *Tx) changedKey(table, op, key string) error {
	return tx.record(Change{Table: table, Op: op, Key: key})
}

// counted records a change that only moved balances or usage counters by
// the amounts of d (column → amount added). Caches of everything else
// ignore it, and the cluster replicates it as a delta event: every node
// adds the same amounts (docs/cluster.md).
func (tx *Tx) counted(table string, id int64, d counterDelta) error {
	return tx.record(Change{Table: table, Op: "UPDATE", ID: id, Counters: true, delta: &d})
}

// billed records a counter change made by ApplyBilling: the billing ledger
// knows about these already and skips them.
func (tx *Tx) billed(table string, id int64, d counterDelta) error {
	if tx.outsideLedger {
		return tx.counted(table, id, d)
	}
	return tx.record(Change{Table: table, Op: "UPDATE", ID: id, Counters: true, Billing: true, delta: &d})
}

func (tx *Tx) record(c Change) error {
	c.Remote = tx.remote
	tx.noteConfig(c)
	if len(tx.s.committed) > 0 {
		tx.changes = append(tx.changes, c)
	}
	if tx.s.outbox != nil && !tx.remote {
		tx.outbox = append(tx.outbox, c)
	}
	if tx.s.onChange == nil {
		return nil
	}
	if err := tx.s.onChange(tx, c); err != nil {
		return fmt.Errorf("record change of %s %d: %w", c.Table, c.ID, err)
	}
	return nil
}

// OnCommit registers f to be told, after each committed transaction, which
// rows it changed. Caches use it to drop stale entries; f must be quick and
// must not write. Register before serving.
func (s *Store) OnCommit(f func(changes []Change)) {
	s.committed = append(s.committed, f)
}

func (s *Store) notifyCommitted(changes []Change) {
	if len(changes) == 0 {
		return
	}
	for _, f := range s.committed {
		f(changes)
	}
}

// read returns a handle for reads outside a transaction.
func (s *Store) read(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// forUpdate is a query that locks the rows it reads until the transaction
// ends. SQLite needs no row lock: its write transactions are exclusive.
func (tx *Tx) forUpdate() *gorm.DB {
	if tx.s.dialect == SQLite {
		return tx.db
	}
	return tx.db.Clauses(clause.Locking{Strength: "UPDATE"})
}

// insertRow allocates an id for a new row of table, lets stamp set it (and
// the timestamps), inserts the row and records the change.
func insertRow[T any](tx *Tx, table string, row *T, stamp func(id, now int64)) error {
	id, err := tx.allocIDs(table, 1)
	if err != nil {
		return err
	}
	stamp(id, time.Now().Unix())
	if err := tx.db.Create(row).Error; err != nil {
		return err
	}
	return tx.changed(table, "INSERT", id)
}
