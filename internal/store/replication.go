package store

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/modelgate/modelgate/internal/logtext"
)

// This file is the surface the replication package (internal/cluster/replica)
// uses: it owns the outbox, applying peers' events, snapshots and the
// digest, and reaches the database only through these names. store keeps
// connections, transactions, migrations and rows (docs/architecture.md).

// IDStride is the id spacing of the cluster: a row or an event created on
// node k has an id ≡ k mod IDStride (ids.go).
const IDStride = idStride

// NthID is the k-th id of a block that AllocIDs began at first.
func NthID(first int64, k int) int64 { return nthID(first, k) }

// NodeID is this node's cluster id (0: single node).
func (s *Store) NodeID() int64 { return s.nodeID }

// Logger is the store's logger.
func (s *Store) Logger() *slog.Logger { return s.log }

// Read returns a handle for reads outside a transaction.
func (s *Store) Read(ctx context.Context) *gorm.DB { return s.read(ctx) }

// Wrap names the operation and maps driver errors to the store's errors
// (ErrNotFound, *DuplicateError), as the store's own methods do.
func Wrap(op string, err error) error { return wrap(op, err) }

// IsRetryable recognises a transaction the database rolled back to break a
// deadlock or a serialization conflict: InTx runs it again.
func IsRetryable(err error) bool { return isRetryable(err) }

// IsUniqueViolation recognises each driver's unique-constraint error.
func IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

// SetOutbox installs the outbox (cluster mode): f is called inside every
// write transaction just before it commits, with the changes it recorded
// (none of a transaction marked remote), so the events commit with the data
// or not at all. Call it before serving.
func (s *Store) SetOutbox(f func(tx *Tx, changes []Change) error) { s.outbox = f }

// DB is the transaction's handle: the replication package reads and writes
// its own tables and the replicated rows through it.
func (tx *Tx) DB() *gorm.DB { return tx.db }

// ForUpdate is a query that locks the rows it reads until the transaction
// ends (no lock on SQLite, whose write transactions are exclusive).
func (tx *Tx) ForUpdate() *gorm.DB { return tx.forUpdate() }

// MarkRemote marks the transaction as applying a peer's events: its changes
// are told to the OnCommit listeners as Remote and never reach the outbox.
func (tx *Tx) MarkRemote() { tx.remote = true }

// Record records a change of a row: the caches drop it after the commit.
func (tx *Tx) Record(c Change) error { return tx.record(c) }

// Counted records a change that only moved the counters of row id by the
// amounts of d (column → amount added).
func (tx *Tx) Counted(table string, id int64, d map[string]int64) error {
	return tx.counted(table, id, d)
}

// AllocIDs reserves n ids of table for this node and returns the first;
// NthID gives the others.
func (tx *Tx) AllocIDs(table string, n int) (int64, error) { return tx.allocIDs(table, n) }

// SequenceValue is the last sequence number handed out for name (0: none).
func SequenceValue(db *gorm.DB, name string) (int64, error) { return sequenceValue(db, name) }

// RaiseSequence makes name's id counter at least seq.
func (tx *Tx) RaiseSequence(name string, seq int64) error { return tx.raiseSequence(name, seq) }

// AddUsage adds a peer's plan usage delta, as the origin counted it.
func (tx *Tx) AddUsage(subscriptionID int64, model string, bucketStart, requests, tokens int64) error {
	d := usageDelta{subscriptionID: subscriptionID, model: model, fine: bucketStart, requests: requests, tokens: tokens}
	return tx.addUsage(d, d)
}

// RebuildAbilities derives the abilities of channel c.
func (tx *Tx) RebuildAbilities(c *Channel) error { return tx.rebuildAbilities(c) }

// DeleteAbilities deletes the abilities of channel id.
func (tx *Tx) DeleteAbilities(channelID int64) error { return tx.deleteAbilities(channelID) }

// RollUp counts logs in the usage rollups and hourly log counts, as
// InsertLogs does.
func (tx *Tx) RollUp(rows []Log) error { return tx.rollUp(rows) }

// DeleteLogsBefore deletes every log created before ts and cuts the
// rollups to match.
func (tx *Tx) DeleteLogsBefore(ts int64) error {
	if err := tx.db.Where("created_at < ?", ts).Delete(&Log{}).Error; err != nil {
		return err
	}
	return tx.cutRollups(ts)
}

// DeleteCountedLogs deletes the logs matching where and takes them off the
// hourly log counts.
func (tx *Tx) DeleteCountedLogs(where string, args ...any) (int64, error) {
	return tx.deleteCountedLogs(where, args...)
}

// DerivedTables are the tables every node derives from the replicated rows
// (abilities, usage rollups and cubes, hourly log counts): a snapshot
// clears them and RebuildDerived fills them again.
func DerivedTables() []string {
	tables := []string{"abilities", "usage_day_models", "usage_day_users"}
	for _, c := range usageCubes {
		tables = append(tables, c.table)
	}
	return append(tables, "log_hour_counts")
}

// RebuildDerived derives the abilities of every channel and the usage
// rollups, cubes and hourly log counts of every log.
func (tx *Tx) RebuildDerived() error {
	var channels []Channel
	if err := tx.db.Find(&channels).Error; err != nil {
		return err
	}
	for i := range channels {
		if err := tx.rebuildAbilities(&channels[i]); err != nil {
			return err
		}
	}
	if err := rebuildRollups(tx.db, 0, 0); err != nil {
		return err
	}
	if err := rebuildCubes(tx.db, usageCubes, 0, 0); err != nil {
		return err
	}
	return recountLogHours(tx.db, 0, 0)
}

// SaturatingAdd is the SQL of col + ? stopping at pricing.MaxCounter; it
// takes the amount twice.
func SaturatingAdd(col string) string { return saturatingAdd(col) }

// InReadTx runs fn in one consistent read-only transaction: on PostgreSQL
// and MySQL at REPEATABLE READ, on SQLite a read transaction of WAL mode.
// Writers are not held up.
func (s *Store) InReadTx(ctx context.Context, fn func(tx *Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect != SQLite {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return s.transaction(s.db.WithContext(ctx), func(db *gorm.DB) error {
		return fn(&Tx{db: db, s: s})
	}, opts)
}

// ReplaceData runs load in one remote transaction that replaces the
// replicated data in bulk (a join or a resync). It is not retried (the
// stream is read once); after the commit every cache reloads.
func (s *Store) ReplaceData(ctx context.Context, load func(tx *Tx) error) error {
	if err := s.enterWriteGate(ctx); err != nil {
		return err
	}
	defer s.leaveWriteGate()
	var tx *Tx
	err := s.transaction(s.db.WithContext(ctx), func(db *gorm.DB) error {
		tx = &Tx{db: db, s: s, remote: true}
		if err := load(tx); err != nil {
			return err
		}
		// Rows arrive in bulk, unlisted: every node's caches reload.
		tx.config, tx.configAll = true, true
		return tx.bumpConfigVersion()
	})
	if err != nil {
		return err
	}
	s.notifyCommitted(tx.changes)
	s.notifyConfig(tx)
	return nil
}

// Delta is the amounts a counter change added (column → amount); ok is
// false for other changes.
func (c Change) Delta() (d map[string]int64, ok bool) {
	if c.delta == nil {
		return nil, false
	}
	return *c.delta, true
}

// Usage is the plan usage a change counted; ok is false for other changes.
func (c Change) Usage() (subscriptionID int64, model string, bucketStart, requests, tokens int64, ok bool) {
	if c.usage == nil {
		return 0, "", 0, 0, 0, false
	}
	u := c.usage
	return u.subscriptionID, u.model, u.fine, u.requests, u.tokens, true
}

// Bulk is the range of logs a change deleted in one statement, or nil.
func (c Change) Bulk() *BulkDelete { return c.bulk }

// Row is the row as written, when the writer had it (logs), or nil.
func (c Change) Row() any { return c.row }

// BulkDelete is a range of logs deleted in one statement: created before
// Before, or the error logs with the listed ids.
type BulkDelete struct {
	Before   int64   `json:"before,omitempty"`
	ErrorIDs []int64 `json:"error_ids,omitempty"`
	// RetainIDs are logs of any type the retention sweep deleted: the
	// rollups keep them (DeleteLogsForRetention). A peer that does not
	// know the field deletes nothing, and its own sweep deletes them.
	RetainIDs []int64 `json:"retain_ids,omitempty"`
}

// ValidText refuses what no text column of ours holds: invalid UTF-8 and
// NUL.
func ValidText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// Apply selects the page's rows of the query db.
func (p Page) Apply(db *gorm.DB) *gorm.DB { return p.apply(db) }

// FirstStartLog is the content of the system log every node writes with
// its root at first start: a seed, not replicated (docs/cluster.md).
const FirstStartLog = logtext.FirstStart
