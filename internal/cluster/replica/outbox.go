package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/store"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Event kinds beyond a row event (docs/cluster.md, Replication).
const (
	// KindDelta adds amounts to counter columns (balances, usage).
	KindDelta = "delta"
	// KindBulk deletes a range of logs.
	KindBulk = "bulk"
)

// Event is one replicated change of this node's outbox, or of a peer's
// batch: spec "Cluster sync event" plus what ordering and deltas need.
// Its node is ID % 50 (store.IDStride): event ids are unique cluster-wide and
// ascend in commit order on their node.
type Event struct {
	ID    int64
	Table string
	// Op is INSERT, UPDATE or DELETE.
	Op string
	// Kind is "" for a row event, KindDelta or KindBulk.
	Kind string
	// PK is the row id (0 for rows keyed by name and bulk events); Key
	// the row's name in tables keyed by name (options).
	PK  int64
	Key string
	// Data is a JSON object: the row after the change (INSERT, UPDATE; an
	// UPDATE leaves counters out), nothing on DELETE, the amounts of a
	// delta, or the range of a bulk delete.
	Data []byte
	// TimeUS is the write's time in microseconds, from this node's hybrid
	// clock: with the node it is the row's version for last-writer-wins.
	TimeUS int64
}

// Node is the node the event originated on.
func (e Event) Node() int { return int(e.ID % idStride) }

// outboxConfig is the outbox's configuration (EnableOutbox).
type outboxConfig struct {
	logs bool
}

// DefaultMaxClockSkew is how far past this node's wall clock an event's
// time may be (CLUSTER_MAX_CLOCK_SKEW's default): the hybrid clock never
// follows a peer's time further.
const DefaultMaxClockSkew = 5 * time.Minute

// OutboxOptions configures the outbox.
type OutboxOptions struct {
	// Logs replicates consume, top-up, admin and error logs too
	// (CLUSTER_SYNC_LOGS, on by default).
	Logs bool
	// MaxClockSkew bounds how far past the wall clock a peer's event time
	// moves this node's hybrid clock (CLUSTER_MAX_CLOCK_SKEW; 0:
	// DefaultMaxClockSkew).
	MaxClockSkew time.Duration
}

// EnableOutbox turns replication on (cluster mode): from now on every
// committed change also writes its events to cluster_events in the same
// transaction. Call it after the node's own seeds (root user, defaults) are
// written, so seeds stay per node, and before serving.
func (s *Replica) EnableOutbox(o OutboxOptions) {
	s.outbox = &outboxConfig{logs: o.Logs}
	s.clock.setMaxAhead(o.MaxClockSkew)
	s.st.SetOutbox(func(tx *store.Tx, changes []store.Change) error { return s.txn(tx).flushOutbox(changes) })
}

// counterDelta is column → amount added by one change.
type counterDelta map[string]int64

// rowChange is the change of one row the outbox writes an event for:
// what store.Change says of it, and the row as written when the writer
// had it.
type rowChange struct {
	Table, Op, Key string
	ID             int64
	row            any
}

// usageDeltaWire is a plan usage delta on the wire.
type usageDeltaWire struct {
	Model       string `json:"model"`
	BucketStart int64  `json:"bucket_start"`
	Requests    int64  `json:"requests"`
	Tokens      int64  `json:"tokens"`
}

// outboxRow is a row of cluster_events.
type outboxRow struct {
	ID         int64  `gorm:"primaryKey;autoIncrement:false"`
	TableName_ string `gorm:"column:table_name"`
	Operation  string
	Kind       string
	PrimaryKey int64
	RowKey     string
	Data       string
	TimeUS     int64 `gorm:"column:time_us"`
	CreatedAt  int64
}

func (outboxRow) TableName() string { return "cluster_events" }

func (r outboxRow) event() Event {
	return Event{ID: r.ID, Table: r.TableName_, Op: r.Operation, Kind: r.Kind, PK: r.PrimaryKey, Key: r.RowKey,
		Data: []byte(r.Data), TimeUS: r.TimeUS}
}

// rowVersion is a row of cluster_versions.
type rowVersion struct {
	TableName_ string `gorm:"column:table_name;primaryKey"`
	RowKey     string `gorm:"primaryKey"`
	TimeUS     int64  `gorm:"column:time_us"`
	NodeID     int
	Deleted    bool
}

func (rowVersion) TableName() string { return "cluster_versions" }

// newer reports whether version (t, node) wins over (vt, vnode): later
// time, ties broken by the higher node id. Every node decides the same.
func newer(t int64, node int, vt int64, vnode int) bool {
	return t > vt || (t == vt && node > vnode)
}

// hybridClock hands out write times in microseconds that never go back
// and pass every version this node has seen, so a write here always wins
// over what it overwrites, even when this node's clock is behind. A time
// seen is followed at most maxAhead past the wall clock: a peer's event
// dated in the far future (issue 24 §2: one dated 2100) cannot drag every
// later write of this node there.
type hybridClock struct {
	mu       sync.Mutex
	last     int64
	maxAhead time.Duration // 0: DefaultMaxClockSkew
}

func (c *hybridClock) setMaxAhead(d time.Duration) {
	c.mu.Lock()
	c.maxAhead = d
	c.mu.Unlock()
}

func (c *hybridClock) next(after int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := max(time.Now().UnixMicro(), c.last+1, after+1)
	c.last = t
	return t
}

func (c *hybridClock) observe(t int64) {
	c.mu.Lock()
	ahead := c.maxAhead
	if ahead <= 0 {
		ahead = DefaultMaxClockSkew
	}
	c.last = max(c.last, min(t, time.Now().Add(ahead).UnixMicro()))
	c.mu.Unlock()
}

// flushOutbox turns the transaction's changes into events, just before
// commit: the events commit with the data or not at all. Ids are
// allocated last, so the id counter's row lock (held to commit on
// PostgreSQL and MySQL) orders the events of concurrent transactions in
// commit order: a pusher that has seen event n has seen every event below
// it.
func (tx *txn) flushOutbox(changes []store.Change) error {
	type ref struct{ table, key string }
	inserted := map[ref]bool{}
	rowOp := map[ref]*rowChange{}
	var order []any // *rowChange of a row, or an Event (delta, bulk)
	now := time.Now().Unix()
	for i := range changes {
		c := &changes[i]
		t := replicatedTable(c.Table)
		sub, model, bucket, requests, tokens, isUsage := c.Usage()
		delta, isDelta := c.Delta()
		switch {
		case isUsage:
			data, err := json.Marshal(usageDeltaWire{model, bucket, requests, tokens})
			if err != nil {
				return err
			}
			order = append(order, Event{Table: "plan_usage", Op: "UPDATE", Kind: KindDelta, PK: sub, Data: data})
		case t == nil || (t.name == "logs" && !tx.s.outbox.logs):
			// Not replicated: abilities (derived), the usage totals
			// (carried by the plan_usage delta).
		case c.Bulk() != nil:
			data, err := json.Marshal(c.Bulk())
			if err != nil {
				return err
			}
			order = append(order, Event{Table: c.Table, Op: "DELETE", Kind: KindBulk, Data: data})
		case isDelta:
			if inserted[ref{c.Table, t.rowKey(c.ID, c.Key)}] {
				continue // the INSERT event carries the counters as committed
			}
			d := map[string]int64{}
			for k, v := range delta {
				if v != 0 {
					d[k] = v
				}
			}
			if len(d) == 0 {
				continue
			}
			data, err := json.Marshal(d)
			if err != nil {
				return err
			}
			order = append(order, Event{Table: c.Table, Op: "UPDATE", Kind: KindDelta, PK: c.ID, Data: data})
		default:
			r := ref{c.Table, t.rowKey(c.ID, c.Key)}
			if prev := rowOp[r]; prev != nil {
				// One event per row: the first INSERT stays an INSERT, a
				// DELETE ends it; the data is read once, at the end.
				if c.Op == "DELETE" || prev.Op == "UPDATE" {
					prev.Op = c.Op
				}
				if row := c.Row(); row != nil {
					prev.row = row
				}
				continue
			}
			cp := rowChange{Table: c.Table, Op: c.Op, Key: c.Key, ID: c.ID, row: c.Row()}
			rowOp[r] = &cp
			if c.Op == "INSERT" {
				inserted[r] = true
			}
			order = append(order, &cp)
		}
	}
	events := make([]outboxRow, 0, len(order))
	for _, o := range order {
		switch o := o.(type) {
		case Event:
			events = append(events, outboxRow{TableName_: o.Table, Operation: o.Op, Kind: o.Kind, PrimaryKey: o.PK,
				Data: string(o.Data), TimeUS: tx.s.clock.next(0), CreatedAt: now})
		case *rowChange:
			ev, ok, err := tx.rowEvent(o)
			if err != nil {
				return fmt.Errorf("outbox: %s %d: %w", o.Table, o.ID, err)
			}
			if ok {
				ev.CreatedAt = now
				events = append(events, ev)
			}
		}
	}
	if len(events) == 0 {
		return nil
	}
	first, err := tx.AllocIDs("cluster_events", len(events))
	if err != nil {
		return err
	}
	for i := range events {
		events[i].ID = store.NthID(first, i)
	}
	return tx.db.CreateInBatches(events, 100).Error
}

// rowEvent reads the row c changed (unless deleted) and stamps its new
// version. A row changed and gone by commit without a recorded DELETE
// yields no event.
func (tx *txn) rowEvent(c *rowChange) (outboxRow, bool, error) {
	t := replicatedTable(c.Table)
	key := t.rowKey(c.ID, c.Key)
	ev := outboxRow{TableName_: c.Table, Operation: c.Op, PrimaryKey: c.ID, RowKey: c.Key}
	if c.Op != "DELETE" {
		row := c.row
		if row == nil {
			row = reflect.New(reflect.TypeOf(t.model).Elem()).Interface()
			err := tx.db.Where(t.keyColumn+" = ?", t.keyValue(c.ID, c.Key)).Take(row).Error
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ev, false, nil
			}
			if err != nil {
				return ev, false, err
			}
		}
		data, err := t.encodeRow(row, c.Op == "INSERT")
		if err != nil {
			return ev, false, err
		}
		ev.Data = string(data)
	}
	if t.appendOnly {
		ev.TimeUS = tx.s.clock.next(0)
		return ev, true, nil
	}
	v, _, err := tx.lockRowVersion(c.Table, key)
	if err != nil {
		return ev, false, err
	}
	ev.TimeUS = tx.s.clock.next(v.TimeUS)
	err = tx.setVersion(rowVersion{TableName_: c.Table, RowKey: key, TimeUS: ev.TimeUS, NodeID: int(tx.s.nodeID), Deleted: c.Op == "DELETE"})
	return ev, err == nil, err
}

// version reads the stored version of a row; found is false for a row
// never versioned (written before cluster mode, or not yet replicated).
func (tx *txn) version(table, key string) (v rowVersion, found bool, err error) {
	err = tx.db.Where("table_name = ? AND row_key = ?", table, key).Limit(1).Find(&v).Error
	return v, v.TimeUS > 0, err
}

// lockRowVersion is version read under a lock held to commit, so two
// transactions writing one row (a local write and a peer's event, or two
// peers' batches) compare and set its version one after the other: without
// it, on PostgreSQL and MySQL both could read the same version and the
// older write could commit last. The row is created first (time 0), as a
// lock cannot be taken on a missing row.
func (tx *txn) lockRowVersion(table, key string) (v rowVersion, found bool, err error) {
	err = tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&rowVersion{TableName_: table, RowKey: key}).Error
	if err != nil {
		return v, false, err
	}
	err = tx.ForUpdate().Where("table_name = ? AND row_key = ?", table, key).Limit(1).Find(&v).Error
	return v, v.TimeUS > 0, err
}

func (tx *txn) setVersion(v rowVersion) error {
	return tx.db.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "table_name"}, {Name: "row_key"}},
		DoUpdates: clause.AssignmentColumns([]string{"time_us", "node_id", "deleted"}),
	}).Create(&v).Error
}

// EventsAfter returns up to limit events of this node's outbox with ids
// above after, in id order: what a peer whose cursor is after has not
// received yet.
func (s *Replica) EventsAfter(ctx context.Context, after int64, limit int) ([]Event, error) {
	var rows []outboxRow
	if err := s.st.Read(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, store.Wrap("read cluster events", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// LastEventID is the id of the newest event of the outbox (0: none).
func (s *Replica) LastEventID(ctx context.Context) (int64, error) {
	var id *int64
	if err := s.st.Read(ctx).Model(&outboxRow{}).Select("MAX(id)").Scan(&id).Error; err != nil {
		return 0, store.Wrap("read last cluster event", err)
	}
	if id == nil {
		return 0, nil
	}
	return *id, nil
}

// clusterCursor is a row of cluster_cursors.
type clusterCursor struct {
	NodeID    int `gorm:"primaryKey;autoIncrement:false"`
	EventID   int64
	UpdatedAt int64
}

func (clusterCursor) TableName() string { return "cluster_cursors" }

// ClusterCursors returns, per peer node id, the last event it
// acknowledged; a peer missing from the map has received nothing.
func (s *Replica) ClusterCursors(ctx context.Context) (map[int]int64, error) {
	var rows []clusterCursor
	if err := s.st.Read(ctx).Find(&rows).Error; err != nil {
		return nil, store.Wrap("read cluster cursors", err)
	}
	m := make(map[int]int64, len(rows))
	for _, r := range rows {
		m[r.NodeID] = r.EventID
	}
	return m, nil
}

// SetClusterCursor records that peer nodeID acknowledged every event up
// to eventID. A cursor never moves back.
func (s *Replica) SetClusterCursor(ctx context.Context, nodeID int, eventID int64) error {
	return store.Wrap("set cluster cursor", s.inTx(ctx, func(tx *txn) error {
		res := tx.db.Model(&clusterCursor{}).Where("node_id = ? AND event_id < ?", nodeID, eventID).
			Updates(map[string]any{"event_id": eventID, "updated_at": time.Now().Unix()})
		if res.Error != nil || res.RowsAffected > 0 {
			return res.Error
		}
		return tx.db.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&clusterCursor{NodeID: nodeID, EventID: eventID, UpdatedAt: time.Now().Unix()}).Error
	}))
}

// PruneEvents deletes the outbox events with ids up to through created
// before ackedBefore, and every event created before olderThan (unix
// seconds), and returns how many went.
func (s *Replica) PruneEvents(ctx context.Context, through, ackedBefore, olderThan int64) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *txn) error {
		res := tx.db.Where("(id <= ? AND created_at < ?) OR created_at < ?", through, ackedBefore, olderThan).Delete(&outboxRow{})
		n = res.RowsAffected
		return res.Error
	})
	return n, store.Wrap("prune cluster events", err)
}
