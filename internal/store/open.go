// Package store owns connections, transactions, migrations and rows: opening
// SQLite, PostgreSQL or MySQL/MariaDB, the versioned migrations, row-id
// allocation, transactions and one file of queries per entity. Every
// mutating method of a replicated table records its change inside its
// transaction; in cluster mode the outbox (internal/cluster/replica,
// installed with SetOutbox) writes the events of those changes in the same
// transaction. replication.go is the surface replication uses; store never
// imports it.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/modelgate/modelgate/internal/store/dsn"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Dialect names the SQL engine behind a Store.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

// Options says which database to open.
type Options struct {
	// DSN selects the engine (package dsn lists the forms): empty means
	// SQLite at SQLitePath, a postgres:// URL or keyword/value settings
	// mean PostgreSQL, user:pass@tcp(host:port)/db or a mysql:// URL means
	// MySQL/MariaDB.
	DSN        string
	SQLitePath string
	// NodeID is the cluster node number (0 on a single node); it is the
	// residue of every row id this process allocates (docs/architecture.md, Cluster).
	NodeID int
	// MaxOpenConns bounds the connections to a server database (0: 32).
	// Nodes sharing one database must together stay below its client
	// limit (PostgreSQL's max_connections is 100 by default).
	MaxOpenConns int
	Logger       *slog.Logger
	// Seed, when set, runs after the migrations under the same startup
	// lock (startuplock.go): first-start rows such as the root user, which
	// nodes starting together must create once.
	Seed func(ctx context.Context, s *Store) error
}

// Store is the database handle. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	dialect Dialect
	nodeID  int64
	log     *slog.Logger
	// writeGate serialises write transactions on SQLite, which allows one
	// writer at a time: waiting here is cheaper and fairer than SQLite's
	// busy-retry loop, and no writer ever sees "database is locked".
	writeGate chan struct{}
	// onChange, when set, is called inside the transaction of every change
	// to a replicated table (tests check that every mutation is recorded).
	onChange func(tx *Tx, c Change) error
	// outbox, set in cluster mode, writes the events of each transaction
	// before it commits (SetOutbox; internal/cluster/replica).
	outbox func(tx *Tx, changes []Change) error
	// committed are told the changes of each committed transaction.
	committed []func(changes []Change)
	// pgDSN is the PostgreSQL connection string, for the listener's own
	// connection (notify.go); empty on other engines.
	pgDSN string
	// configCommitted are told each committed configuration change with
	// its config version (config_state.go).
	configCommitted []func(ConfigCommit)
	// lease is this process's billing lease (leases.go).
	lease leaseState
	// roundTrips counts the statements sent to the database (roundtrips.go).
	roundTrips roundTripCounter
	// writer is the connection SQLite's write transactions run on
	// (logs_sqlite.go); nil on the server databases.
	writer *sqliteWriter
}

// Change describes one row change of a replicated table.
type Change struct {
	Table string
	Op    string // INSERT, UPDATE or DELETE
	ID    int64
	// Key is the row's key in tables keyed by name (options), else "".
	Key string
	// Counters is true when only balances or usage counters moved.
	Counters bool
	// Billing is true for the billing ledger's own settlements.
	Billing bool
	// Remote is true for a change applied from a peer's event.
	Remote bool

	// What the outbox needs beyond the row (Delta, Usage, Bulk, Row); at
	// most one is set.
	delta *counterDelta // amounts added to counter columns
	usage *usageDelta   // plan usage counted
	bulk  *BulkDelete   // a range of logs deleted
	row   any           // the row as written, when the writer has it (logs)
}

// RemoteUsage reports the plan usage a peer's event added here: the
// in-memory usage book of SQLite must count it too.
func (c Change) RemoteUsage() (subscriptionID int64, model string, bucketStart, requests, tokens int64, ok bool) {
	if !c.Remote || c.usage == nil {
		return 0, "", 0, 0, 0, false
	}
	u := c.usage
	return u.subscriptionID, u.model, u.fine, u.requests, u.tokens, true
}

// Open connects, applies pending migrations and returns the Store.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NodeID < 0 || o.NodeID >= idStride {
		return nil, fmt.Errorf("open store: node id %d outside 0..%d", o.NodeID, idStride-1)
	}
	engine, driverDSN, err := dsn.Parse(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("open store: SQL_DSN: %w", err)
	}
	s := &Store{nodeID: int64(o.NodeID), log: o.Logger, dialect: Dialect(engine)}
	var dialector gorm.Dialector
	switch s.dialect {
	case SQLite:
		if err := os.MkdirAll(filepath.Dir(o.SQLitePath), 0o700); err != nil {
			return nil, fmt.Errorf("open store: create data dir: %w", err)
		}
		dialector = gormlite.Open(sqliteDSN(o.SQLitePath))
		s.writeGate = make(chan struct{}, 1)
	case Postgres:
		dialector = postgres.Open(driverDSN)
		s.pgDSN = driverDSN
	default:
		dialector = mysql.Open(mysqlDSN(driverDSN))
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", s.dialect, err)
	}
	if err := s.registerRoundTrips(db); err != nil {
		return nil, fmt.Errorf("open %s store: %w", s.dialect, err)
	}
	s.db = db
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", s.dialect, err)
	}
	if s.dialect == SQLite {
		// Each connection is a separate SQLite instance with its own page
		// cache; writes are serialised anyway (one writer connection), and
		// 4 readers are plenty.
		sqlDB.SetMaxOpenConns(5)
		sqlDB.SetMaxIdleConns(5)
	} else {
		open := o.MaxOpenConns
		if open <= 0 {
			open = 32
		}
		sqlDB.SetMaxOpenConns(open)
		sqlDB.SetMaxIdleConns(max(open/2, 1))
		sqlDB.SetConnMaxLifetime(30 * time.Minute)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open %s store: %w", s.dialect, err)
	}
	if s.dialect == SQLite {
		if s.writer, err = newSQLiteWriter(ctx, sqlDB); err != nil {
			sqlDB.Close()
			return nil, fmt.Errorf("open %s store: %w", s.dialect, err)
		}
	}
	s.startStmtCache(sqlDB)
	err = s.withStartupLock(ctx, func() error {
		if err := s.migrate(ctx); err != nil {
			return err
		}
		if err := s.clampMoneyColumns(ctx); err != nil {
			return err
		}
		if o.Seed != nil {
			return o.Seed(ctx, s)
		}
		return nil
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// sqliteDSN puts the pragmas in the DSN so every pooled connection gets them
// (docs/architecture.md, Storage): WAL for concurrent readers, immediate transactions so a
// read-then-write transaction never fails on a lock upgrade.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
}

// mysqlDSN adds the parameters modelgate relies on when the operator left
// them out: parsed times, utf8mb4 and a UTC session. interpolateParams
// sends a statement with arguments as one query, where the driver would
// otherwise prepare it, run it and close it: three exchanges for every
// statement, and a fresh server-side prepare of every group commit's
// multi-row INSERT. The driver escapes the arguments itself, which is safe
// with utf8mb4 (it refuses the multibyte charsets where it is not).
func mysqlDSN(dsn string) string {
	add := func(key, value string) {
		if strings.Contains(dsn, key+"=") {
			return
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + key + "=" + value
	}
	add("parseTime", "true")
	add("charset", "utf8mb4")
	add("loc", "UTC")
	add("interpolateParams", "true")
	return dsn
}

// Dialect reports which engine the store runs on.
func (s *Store) Dialect() Dialect { return s.dialect }

// SetChangeHook installs the function called inside the transaction of every
// change to a replicated table: tests use it to check that every mutation is
// recorded. Call it before serving.
func (s *Store) SetChangeHook(f func(tx *Tx, c Change) error) { s.onChange = f }

// Close closes the database connections.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	stopStmtCache(sqlDB)
	if s.writer == nil {
		return sqlDB.Close()
	}
	// The writer goes back to the pool once its statements are finalized,
	// which waits for the write slot: no transaction is using them then. A
	// write that still runs after closeWait keeps the writer and its
	// statements (they go with the process) rather than having them
	// finalized under it.
	gate, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := s.enterWriteGate(gate); err != nil {
		return errors.Join(fmt.Errorf("close store: a write transaction still runs: %w", err), sqlDB.Close())
	}
	err = s.writer.close()
	s.leaveWriteGate()
	return errors.Join(err, sqlDB.Close())
}

// closeWait bounds Close's wait for a write transaction in progress.
const closeWait = 30 * time.Second

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Errors returned by store methods. Callers test them with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrDuplicate = errors.New("already exists")
	// ErrConflict means a conditional update matched no row: the state the
	// caller relied on (a balance, a status) was no longer true.
	ErrConflict = errors.New("conflict")
)

// wrap names the operation and maps driver errors to the store's errors.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	case isUniqueViolation(err):
		return &DuplicateError{Op: op, Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isUniqueViolation recognises each driver's unique-constraint error. GORM's
// TranslateError would do this too, but it replaces the database's message,
// which the spec wants shown.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	var myErr *mysqldriver.MySQLError
	var liteErr *sqlite3.Error
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Code == "23505"
	case errors.As(err, &myErr):
		return myErr.Number == 1062
	case errors.As(err, &liteErr):
		return liteErr.ExtendedCode() == sqlite3.CONSTRAINT_UNIQUE || liteErr.ExtendedCode() == sqlite3.CONSTRAINT_PRIMARYKEY
	}
	return false
}

// DuplicateError is a unique-constraint violation. Error() carries the
// database's own text, which the spec asks for on duplicate model prices.
type DuplicateError struct {
	Op  string
	Err error
}

func (e *DuplicateError) Error() string { return e.Err.Error() }

// Is makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// Unwrap returns the driver error.
func (e *DuplicateError) Unwrap() error { return e.Err }
