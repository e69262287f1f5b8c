package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
	"gorm.io/gorm/clause"
)

// ErrForeignEvent refuses a batch holding an event that did not originate
// on the node that sent it: nodes push their own events only.
var ErrForeignEvent = errors.New("event not from the sending node")

// errSkip marks an event that is not applied and not an error of the
// batch: stale (an older version than the row's), unknown table, bad data,
// or a unique key another row holds here. It is counted as skipped.
var errSkip = errors.New("skipped")

// appliedMark is a row of cluster_applied.
type appliedMark struct {
	NodeID    int `gorm:"primaryKey;autoIncrement:false"`
	EventID   int64
	UpdatedAt int64
}

func (appliedMark) TableName() string { return "cluster_applied" }

// ApplyEvents applies a batch of events pushed by node source, in one
// transaction, and reports how many were applied and skipped (docs/cluster.md,
// Receiving). Skipped: events of this node (spec rule 1), events at or
// below what this node already applied from source (a re-delivered batch),
// and events that lose to the row's current version or cannot apply here
// (logged). A batch whose events of source do not continue the applied
// mark one seq at a time is refused whole with a *SequenceError, nothing
// applied. Nothing applied is written to this node's outbox; the changes
// are told to the store.OnCommit listeners, so caches drop what moved.
func (s *Replica) ApplyEvents(ctx context.Context, source int, events []Event) (applied, skipped int, err error) {
	for _, ev := range events {
		if n := ev.Node(); n != source && n != int(s.nodeID) {
			return 0, 0, fmt.Errorf("apply events: event %d: %w", ev.ID, ErrForeignEvent)
		}
	}
	s.applyGate.RLock()
	defer s.applyGate.RUnlock()
	err = s.inTx(ctx, func(tx *txn) error {
		tx.MarkRemote()
		applied, skipped = 0, 0
		// The mark row exists before it is locked: concurrent pushes of a
		// source's first batch would otherwise find no row to lock and all
		// apply it (PostgreSQL), or deadlock on the gap (MySQL).
		if err := tx.db.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&appliedMark{NodeID: source, UpdatedAt: time.Now().Unix()}).Error; err != nil {
			return err
		}
		var mark appliedMark
		if err := tx.ForUpdate().Where("node_id = ?", source).Limit(1).Find(&mark).Error; err != nil {
			return err
		}
		if expected, ok := checkSequence(source, mark.EventID, events); !ok {
			return &SequenceError{Source: source, Expected: expected}
		}
		last := mark.EventID
		for _, ev := range events {
			if ev.Node() == int(s.nodeID) || ev.ID <= last {
				skipped++
				continue
			}
			// Applied or skipped by a rule (stale, cannot apply here),
			// the event is received in order: the mark moves past it.
			last = ev.ID
			ok, err := tx.applySafely(ev)
			if err != nil {
				return fmt.Errorf("event %d (%s %s): %w", ev.ID, ev.Table, ev.Op, err)
			}
			if ok {
				applied++
			} else {
				skipped++
			}
		}
		if last == mark.EventID {
			return nil
		}
		return tx.db.Model(&appliedMark{}).Where("node_id = ?", source).
			Updates(map[string]any{"event_id": last, "updated_at": time.Now().Unix()}).Error
	})
	return applied, skipped, store.Wrap("apply cluster events", err)
}

// AppliedMarks returns, per origin node, the last of its events applied
// here.
func (s *Replica) AppliedMarks(ctx context.Context) (map[int]int64, error) {
	var rows []appliedMark
	if err := s.st.Read(ctx).Find(&rows).Error; err != nil {
		return nil, store.Wrap("read applied cluster events", err)
	}
	m := make(map[int]int64, len(rows))
	for _, r := range rows {
		m[r.NodeID] = r.EventID
	}
	return m, nil
}

// applySafely applies ev inside a savepoint: an event that cannot apply
// here (errSkip, a unique key held by another row) is rolled back alone,
// logged and skipped, and the rest of the batch goes on; one the database
// refuses for its values is also kept in cluster_failed_events. Any other
// error (the database unavailable, a deadlock) fails the batch, which the
// sender retries.
func (tx *txn) applySafely(ev Event) (bool, error) {
	if err := tx.db.SavePoint("ev").Error; err != nil {
		return false, err
	}
	err := tx.applyEvent(ev)
	if err == nil {
		return true, nil
	}
	if store.IsRetryable(err) {
		// A deadlock victim: MySQL has rolled the whole transaction back,
		// savepoint included. The error makes InTx run the batch again.
		return false, err
	}
	if rb := tx.db.RollbackTo("ev").Error; rb != nil {
		return false, rb
	}
	switch {
	case errors.Is(err, errStale):
	case errors.Is(err, errRootGuard):
		tx.s.log.Warn("cluster event skipped: root is per node, no peer makes, demotes, disables or deletes a root here",
			"event_id", ev.ID, "node_id", ev.Node(), "table", ev.Table, "operation", ev.Op, "primary_key", ev.PK)
	case store.IsUniqueViolation(err):
		// Not the driver's text: MySQL's names the duplicate value, which
		// may be a key hash.
		tx.s.log.Warn("cluster event skipped: a unique key it holds belongs to another row here", "event_id", ev.ID,
			"node_id", ev.Node(), "table", ev.Table, "operation", ev.Op, "primary_key", ev.PK)
	case errors.Is(err, errSkip):
		tx.s.log.Warn("cluster event skipped: it cannot apply here", "event_id", ev.ID, "node_id", ev.Node(),
			"table", ev.Table, "operation", ev.Op, "primary_key", ev.PK, "err", err)
	case isDataError(err):
		tx.s.log.Error("cluster event refused by the database: kept in cluster_failed_events, skipped",
			"event_id", ev.ID, "node_id", ev.Node(), "table", ev.Table, "operation", ev.Op, "primary_key", ev.PK, "err", err)
		if err := tx.keepFailed(ev, err); err != nil {
			return false, err
		}
	default:
		return false, err
	}
	return false, nil
}

// errStale is an event older than the row's version: last writer wins.
var errStale = fmt.Errorf("older than the row's version: %w", errSkip)

func (tx *txn) applyEvent(ev Event) error {
	switch ev.Kind {
	case KindDelta:
		return tx.applyDelta(ev)
	case KindBulk:
		return tx.applyBulk(ev)
	case "":
	default:
		return fmt.Errorf("kind %q: %w", ev.Kind, errSkip)
	}
	t := replicatedTable(ev.Table)
	if t == nil {
		return fmt.Errorf("table %q does not replicate: %w", ev.Table, errSkip)
	}
	if ev.Op != "INSERT" && ev.Op != "UPDATE" && ev.Op != "DELETE" {
		return fmt.Errorf("operation %q: %w", ev.Op, errSkip)
	}
	if t.appendOnly {
		return tx.applyAppend(t, ev)
	}
	if t.integerKey() && ev.PK <= 0 || !t.integerKey() && (ev.Key == "" || !store.ValidText(ev.Key)) {
		return fmt.Errorf("no row key: %w", errSkip)
	}
	key := t.rowKey(ev.PK, ev.Key)
	v, found, err := tx.lockVersion(t, ev)
	if err != nil {
		return err
	}
	forward, err := tx.statusOrder(t, ev)
	if err != nil {
		return err
	}
	older := found && !newer(ev.TimeUS, ev.Node(), v.TimeUS, v.NodeID)
	if older && forward == 0 && ev.Op == "INSERT" && len(t.counters) > 0 {
		// A newer UPDATE relayed by another node created the row
		// without counters: the INSERT's initial balances still count.
		return tx.addInsertCounters(t, ev)
	}
	if forward < 0 || older && forward == 0 {
		return errStale
	}
	if err := tx.guardRoot(t, ev); err != nil {
		return err
	}
	tx.s.clock.observe(ev.TimeUS)
	nv := rowVersion{TableName_: t.name, RowKey: key, TimeUS: ev.TimeUS, NodeID: ev.Node(), Deleted: ev.Op == "DELETE"}
	if older {
		// A state further along applied over a newer write keeps the
		// newer version, so the versions still only grow.
		nv.TimeUS, nv.NodeID = v.TimeUS, v.NodeID
	}
	if err := tx.setVersion(nv); err != nil {
		return err
	}
	kv := t.keyValue(ev.PK, ev.Key)
	if ev.Op == "DELETE" {
		if err := tx.db.Exec("DELETE FROM "+t.name+" WHERE "+t.keyColumn+" = ?", kv).Error; err != nil {
			return err
		}
		if err := tx.db.Where("table_name = ? AND primary_key = ?", t.name, ev.PK).Delete(&parkedDelta{}).Error; err != nil {
			return err
		}
		if t.name == "channels" {
			if err := tx.DeleteAbilities(ev.PK); err != nil {
				return err
			}
		}
		return tx.Record(store.Change{Table: t.name, Op: "DELETE", ID: ev.PK, Key: ev.Key})
	}
	cols, err := t.decodeRow(ev.Data)
	if err != nil {
		return fmt.Errorf("%v: %w", err, errSkip)
	}
	if cols[t.keyColumn] != kv {
		return fmt.Errorf("row key differs from the event's: %w", errSkip)
	}
	var n int64
	if err := tx.db.Table(t.name).Where(t.keyColumn+" = ?", kv).Count(&n).Error; err != nil {
		return err
	}
	counters, err := takeCounters(t, cols)
	if err != nil {
		return err
	}
	if n > 0 {
		delete(cols, t.keyColumn)
		if err := tx.db.Table(t.name).Where(t.keyColumn+" = ?", kv).Updates(cols).Error; err != nil {
			return err
		}
		// An INSERT overtaken by an UPDATE relayed through another node:
		// its counters still count.
		if ev.Op == "INSERT" {
			if _, err := tx.addCounters(t, ev.PK, counters); err != nil {
				return err
			}
		}
	} else {
		if ev.Op == "INSERT" {
			for c, v := range counters {
				cols[c] = v
			}
		}
		if err := tx.db.Table(t.name).Create(cols).Error; err != nil {
			return err
		}
		if err := tx.unpark(t, ev.PK); err != nil {
			return err
		}
	}
	if t.name == "channels" {
		var c store.Channel
		if err := tx.db.Where("id = ?", ev.PK).Take(&c).Error; err != nil {
			return err
		}
		if err := tx.RebuildAbilities(&c); err != nil {
			return err
		}
	}
	return tx.Record(store.Change{Table: t.name, Op: ev.Op, ID: ev.PK, Key: ev.Key})
}

// addInsertCounters adds the counters an INSERT event carries to the row
// (a stale INSERT: the row's data is newer, its balances are not).
func (tx *txn) addInsertCounters(t *replicated, ev Event) error {
	cols, err := t.decodeRow(ev.Data)
	if err != nil {
		return fmt.Errorf("%v: %w", err, errSkip)
	}
	d, err := takeCounters(t, cols)
	if err != nil {
		return err
	}
	_, err = tx.addCounters(t, ev.PK, d)
	return err
}

// takeCounters moves the counter columns of a decoded row into a delta,
// checked as a delta event's amounts are.
func takeCounters(t *replicated, cols map[string]any) (counterDelta, error) {
	d := counterDelta{}
	for _, c := range t.counters {
		if v, ok := cols[c].(int64); ok {
			if !deltaAllowed(c, v) {
				return nil, fmt.Errorf("counter %s out of range: %w", c, errSkip)
			}
			d[c] = v
		}
		delete(cols, c)
	}
	return d, nil
}

// lockVersion locks the row ev changes, then reads its version with a
// locking read: the order a local write takes them (its UPDATE, then the
// version at commit). A local write of the row then commits before the
// version is read here, or waits until this transaction commits. A plain
// read could see a version older than a local write that committed
// meanwhile (MySQL's snapshot, a PostgreSQL statement that started before
// the commit) and let an older event overwrite a newer row: the nodes
// would not converge. The version row is created first when missing, so
// two peers' events for a row not here yet are serialised too.
func (tx *txn) lockVersion(t *replicated, ev Event) (v rowVersion, found bool, err error) {
	var rows []map[string]any
	err = tx.ForUpdate().Table(t.name).Select(t.keyColumn).Where(t.keyColumn+" = ?", t.keyValue(ev.PK, ev.Key)).Find(&rows).Error
	if err != nil {
		return v, false, err
	}
	return tx.lockRowVersion(t.name, t.rowKey(ev.PK, ev.Key))
}

// applyAppend inserts a row of an append-only table (logs) and counts it
// in the usage rollups, as store.InsertLogs does.
func (tx *txn) applyAppend(t *replicated, ev Event) error {
	if ev.Op != "INSERT" {
		return fmt.Errorf("%s rows are only inserted: %w", t.name, errSkip)
	}
	cols, err := t.decodeRow(ev.Data)
	if err != nil {
		return fmt.Errorf("%v: %w", err, errSkip)
	}
	var row store.Log
	if err := t.fill(&row, cols); err != nil || row.ID != ev.PK || row.ID <= 0 {
		return fmt.Errorf("log row: %w", errSkip)
	}
	if err := tx.db.Table(t.name).Create(cols).Error; err != nil {
		return err
	}
	if err := tx.RollUp([]store.Log{row}); err != nil {
		return err
	}
	return tx.Record(store.Change{Table: t.name, Op: "INSERT", ID: ev.PK})
}

// applyBulk deletes the range of logs a peer deleted.
func (tx *txn) applyBulk(ev Event) error {
	if ev.Table != "logs" || ev.Op != "DELETE" {
		return fmt.Errorf("bulk %s %s: %w", ev.Table, ev.Op, errSkip)
	}
	var b store.BulkDelete
	if err := json.Unmarshal(ev.Data, &b); err != nil {
		return fmt.Errorf("%v: %w", err, errSkip)
	}
	if b.Before > 0 {
		if err := tx.DeleteLogsBefore(b.Before); err != nil {
			return err
		}
	}
	if len(b.ErrorIDs) > 0 {
		if _, err := tx.DeleteCountedLogs("id IN ? AND type = ?", b.ErrorIDs, store.LogError); err != nil {
			return err
		}
	}
	if len(b.RetainIDs) > 0 {
		if _, err := tx.DeleteCountedLogs("id IN ?", b.RetainIDs); err != nil {
			return err
		}
	}
	return tx.Record(store.Change{Table: "logs", Op: "DELETE"})
}

// parkedDelta is a row of cluster_parked: a delta for a row that has not
// arrived here yet (its INSERT comes from another node, later).
type parkedDelta struct {
	EventID    int64  `gorm:"primaryKey;autoIncrement:false"`
	TableName_ string `gorm:"column:table_name"`
	PrimaryKey int64
	Data       string
	CreatedAt  int64
}

func (parkedDelta) TableName() string { return "cluster_parked" }

// deltaAllowed bounds each counter's amount in one event: a balance moves
// by at most MaxBalance, a usage counter only grows.
func deltaAllowed(col string, v int64) bool {
	switch col {
	case "quota", "remain_quota":
		return v >= -pricing.MaxBalance && v <= pricing.MaxBalance
	case "accessed_time":
		return v >= 0
	default: // used_quota, request_count
		return v >= 0 && v <= pricing.MaxCounter
	}
}

func (tx *txn) applyDelta(ev Event) error {
	if ev.Table == "plan_usage" {
		var u usageDeltaWire
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			return fmt.Errorf("%v: %w", err, errSkip)
		}
		if ev.PK <= 0 || u.Model == "" || !store.ValidText(u.Model) || len(u.Model) > 191 ||
			u.Requests < -planlimit.MaxAmount || u.Requests > planlimit.MaxAmount ||
			u.Tokens < -planlimit.MaxAmount || u.Tokens > planlimit.MaxAmount {
			return fmt.Errorf("plan usage delta out of range: %w", errSkip)
		}
		return tx.AddUsage(ev.PK, u.Model, u.BucketStart, u.Requests, u.Tokens)
	}
	t := replicatedTable(ev.Table)
	if t == nil || len(t.counters) == 0 || ev.PK <= 0 {
		return fmt.Errorf("delta of %q: %w", ev.Table, errSkip)
	}
	var d counterDelta
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return fmt.Errorf("%v: %w", err, errSkip)
	}
	for c, v := range d {
		if !t.isCounter(c) || !deltaAllowed(c, v) {
			return fmt.Errorf("delta of %s.%s: %w", t.name, c, errSkip)
		}
	}
	if d["used_quota"] > 0 {
		// A call's charge on a grantee node (a settlement moves the
		// balance and used_quota together; an admin's debit moves the
		// balance alone): its grant here shrinks by as much.
		spent := map[string]int64{"users": -d["quota"], "tokens": -d["remain_quota"]}[t.name]
		if err := tx.SpendGrant(t.name, ev.PK, ev.Node(), spent); err != nil {
			return err
		}
	}
	ok, err := tx.addCounters(t, ev.PK, d)
	if err != nil || ok {
		return err
	}
	// The row is not here: gone (its tombstone says so) or not arrived yet.
	v, found, err := tx.version(t.name, t.rowKey(ev.PK, ""))
	if err != nil || (found && v.Deleted) {
		return err
	}
	return tx.db.Create(&parkedDelta{EventID: ev.ID, TableName_: t.name, PrimaryKey: ev.PK, Data: string(ev.Data),
		CreatedAt: time.Now().Unix()}).Error
}

// unpark applies the deltas that waited for row id of t.
func (tx *txn) unpark(t *replicated, id int64) error {
	var rows []parkedDelta
	if err := tx.db.Where("table_name = ? AND primary_key = ?", t.name, id).Order("event_id").Find(&rows).Error; err != nil {
		return err
	}
	for _, r := range rows {
		var d counterDelta
		if err := json.Unmarshal([]byte(r.Data), &d); err != nil {
			continue
		}
		if _, err := tx.addCounters(t, id, d); err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return tx.db.Where("table_name = ? AND primary_key = ?", t.name, id).Delete(&parkedDelta{}).Error
}

// addCounters adds d to row id of t as its origin did: balances within
// ±MaxBalance, usage counters saturating, accessed_time the later one.
// found is false when the row is not here.
func (tx *txn) addCounters(t *replicated, id int64, d counterDelta) (found bool, err error) {
	var sets []string
	var args []any
	for _, c := range slices.Sorted(maps.Keys(d)) { // the same statement every run
		v := d[c]
		if v == 0 && c != "request_count" {
			continue
		}
		switch c {
		case "quota", "remain_quota":
			sets = append(sets, boundedAdd(c, v))
			args = append(args, v, v)
		case "accessed_time":
			sets = append(sets, "accessed_time = CASE WHEN accessed_time < ? THEN ? ELSE accessed_time END")
			args = append(args, v, v)
		case "request_count":
			sets = append(sets, "request_count = request_count + ?")
			args = append(args, v)
		default:
			sets = append(sets, c+" = "+store.SaturatingAdd(c))
			args = append(args, v, v)
		}
	}
	if len(sets) == 0 {
		var n int64
		err := tx.db.Table(t.name).Where("id = ?", id).Count(&n).Error
		return n > 0, err
	}
	res := tx.db.Exec("UPDATE "+t.name+" SET "+strings.Join(sets, ", ")+" WHERE id = ?", append(args, id)...)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 0 {
		// MySQL counts changed rows, not matched ones: a counter already
		// at its cap matched without changing.
		var n int64
		if err := tx.db.Table(t.name).Where("id = ?", id).Count(&n).Error; err != nil || n == 0 {
			return false, err
		}
	}
	return true, tx.Counted(t.name, id, d)
}

// boundedAdd is the SQL of col + v kept within ±pricing.MaxBalance; it
// takes v twice. No comparison can overflow: the column and v are within
// ±MaxBalance. The bound is chosen by v's sign here rather than in SQL: a
// parameter compared with a bare 0 is typed int4 by PostgreSQL, which then
// refuses any amount above 2^31 (every top-up over 2,147 CNY).
func boundedAdd(col string, v int64) string {
	m := pricing.MaxBalance
	if v < 0 {
		return fmt.Sprintf("%s = CASE WHEN %s < %d - ? THEN %d ELSE %s + ? END", col, col, -m, -m, col)
	}
	return fmt.Sprintf("%s = CASE WHEN %s > %d - ? THEN %d ELSE %s + ? END", col, col, m, m, col)
}
