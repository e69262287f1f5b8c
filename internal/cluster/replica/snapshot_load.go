package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

var (
	// ErrNotFresh refuses a snapshot on a node that has data of its own
	// (docs/cluster.md, Joining a new node): loading would destroy it.
	ErrNotFresh = errors.New("this node has data of its own")
	// ErrSnapshotBehind refuses a snapshot older than what this node has
	// already applied from some node: loading it would lose those events.
	ErrSnapshotBehind = errors.New("the snapshot is behind this node")
	// ErrBadSnapshot is a snapshot that is cut short or not well formed.
	ErrBadSnapshot = errors.New("incomplete or invalid snapshot")
)

// snapshotBatch is how many rows of one table are inserted per statement.
const snapshotBatch = 200

// seedGroups are the group prices every node seeds at first start.
var seedGroups = []string{"default", "vip", "svip"}

// LoadSnapshot replaces this node's data by the snapshot read line by line
// from next (io.EOF ends it), in one transaction that commits only when
// the end line arrived with the right row count: a cut or garbled stream
// changes nothing (ErrBadSnapshot). It refuses a node that is not fresh
// (ErrNotFresh) and a snapshot behind what this node applied
// (ErrSnapshotBehind). Nothing loaded goes to the outbox; the loaded rows
// are told to the store.OnCommit listeners as remote changes, so every cache
// drops what it held. While it runs, no pushed batch is applied here.
//
// next is first called inside the transaction, so a puller that connects on
// the first call takes its snapshot after this node stopped applying
// batches. The transaction is not retried (the stream is read once).
func (s *Replica) LoadSnapshot(ctx context.Context, next func() ([]byte, error)) (rows int64, positions map[int]int64, err error) {
	err = s.replaceData(ctx, "load snapshot", func(tx *txn) error {
		var err error
		rows, positions, err = tx.loadSnapshot(next)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return rows, positions, nil
}

// replaceData runs load in one transaction that replaces the replicated
// data (a join or a resync), with no pushed batch applied meanwhile, and
// tells every cache to reload after the commit (store.ReplaceData).
func (s *Replica) replaceData(ctx context.Context, op string, load func(tx *txn) error) error {
	s.applyGate.Lock()
	defer s.applyGate.Unlock()
	err := s.st.ReplaceData(ctx, func(tx *store.Tx) error { return load(s.txn(tx)) })
	return store.Wrap(op, err)
}

func (tx *txn) loadSnapshot(next func() ([]byte, error)) (int64, map[int]int64, error) {
	if err := tx.checkFresh(); err != nil {
		return 0, nil, err
	}
	line, err := next()
	if err != nil {
		return 0, nil, snapshotReadErr(err)
	}
	positions, err := tx.checkHeader(line)
	if err != nil {
		return 0, nil, err
	}
	if err := tx.clearForSnapshot(); err != nil {
		return 0, nil, err
	}
	rows, err := tx.insertSnapshotRows(next)
	if err != nil {
		return 0, nil, err
	}
	if err := tx.afterSnapshot(positions); err != nil {
		return 0, nil, err
	}
	return rows, positions, nil
}

func snapshotReadErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the stream ended before its end line", ErrBadSnapshot)
	}
	return err
}

// checkFresh refuses a node with data of its own (docs/cluster.md):
// it produced an event, or holds a row it created (id residue this node's
// or 0, a single node's) beyond the seeds (the root user, the seeded group
// prices, the first-start log), or an option no peer sent. Rows applied
// from peers are allowed: the snapshot holds them too (checkHeader).
func (tx *txn) checkFresh() error {
	seq, err := store.SequenceValue(tx.db, "cluster_events")
	if err != nil {
		return err
	}
	var events int64
	if err := tx.db.Model(&outboxRow{}).Count(&events).Error; err != nil {
		return err
	}
	if seq > 0 || events > 0 {
		return fmt.Errorf("%w: it has written changes of its own", ErrNotFresh)
	}
	own := fmt.Sprintf("(id %% %d) IN (0, %d)", idStride, tx.s.nodeID)
	for _, t := range replicatedTables {
		if t.keyColumn != "id" {
			continue
		}
		q, limit := tx.db.Table(t.name).Where(own), int64(0)
		switch t.name {
		case "users":
			q = q.Where("role <> ?", user.RoleRoot)
		case "group_prices":
			q = q.Where("group_name NOT IN ?", seedGroups)
		case "logs":
			limit = 1 // the first-start log
		}
		var n int64
		if err := q.Count(&n).Error; err != nil {
			return err
		}
		if n > limit {
			return fmt.Errorf("%w: %d rows of %s", ErrNotFresh, n, t.name)
		}
	}
	// The seeded root, at most once.
	var users int64
	if err := tx.db.Table("users").Where(own).Count(&users).Error; err != nil {
		return err
	}
	if users > 1 {
		return fmt.Errorf("%w: %d users", ErrNotFresh, users)
	}
	var options int64
	err = tx.db.Table("options").Where("option_key NOT IN (?)",
		tx.db.Table("cluster_versions").Select("row_key").Where("table_name = ?", "options")).Count(&options).Error
	if err != nil {
		return err
	}
	if options > 0 {
		return fmt.Errorf("%w: %d settings", ErrNotFresh, options)
	}
	return nil
}

// checkHeader reads the first line and refuses a snapshot behind this
// node: an origin whose events this node applied further than the
// snapshot holds (a peer pushed here before the source got it).
func (tx *txn) checkHeader(line []byte) (map[int]int64, error) {
	var h snapshotHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Positions == nil || h.NodeID < 1 || h.NodeID >= idStride {
		return nil, fmt.Errorf("%w: the first line is not a snapshot header", ErrBadSnapshot)
	}
	positions := make(map[int]int64, len(h.Positions))
	for k, v := range h.Positions {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || n >= idStride || v < 0 || v%idStride != int64(n) {
			return nil, fmt.Errorf("%w: position %q", ErrBadSnapshot, k)
		}
		positions[n] = v
	}
	var marks []appliedMark
	if err := tx.db.Find(&marks).Error; err != nil {
		return nil, err
	}
	for _, m := range marks {
		if m.EventID > positions[m.NodeID] && m.NodeID != int(tx.s.nodeID) {
			return nil, fmt.Errorf("%w: node %d's events applied here up to %d, the snapshot has them up to %d",
				ErrSnapshotBehind, m.NodeID, m.EventID, positions[m.NodeID])
		}
	}
	return positions, nil
}

// clearForSnapshot deletes what the snapshot replaces, telling the caches
// which users and tokens went (the seeded root).
func (tx *txn) clearForSnapshot() error {
	for _, table := range []string{"users", "tokens"} {
		var ids []int64
		if err := tx.db.Table(table).Pluck("id", &ids).Error; err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.Record(store.Change{Table: table, Op: "DELETE", ID: id}); err != nil {
				return err
			}
		}
	}
	tables := append(store.DerivedTables(), "cluster_applied")
	for _, t := range replicatedTables {
		tables = append(tables, t.name)
	}
	for _, t := range snapshotState {
		tables = append(tables, t.name)
	}
	for _, table := range tables {
		// Every engine accepts an unconditioned DELETE; TRUNCATE would
		// commit on MySQL.
		if err := tx.db.Exec("DELETE FROM " + table).Error; err != nil {
			return fmt.Errorf("clear %s: %w", table, err)
		}
	}
	return nil
}

// insertSnapshotRows inserts the row lines up to the end line and checks
// the count.
func (tx *txn) insertSnapshotRows(next func() ([]byte, error)) (int64, error) {
	var rows int64
	var batch []map[string]any
	var batchTable *replicated
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := tx.insertSnapshotBatch(batchTable, batch)
		batch = batch[:0]
		return err
	}
	for {
		line, err := next()
		if err != nil {
			return 0, snapshotReadErr(err)
		}
		if bytes.HasPrefix(line, []byte(`{"end"`)) {
			var end snapshotEnd
			if err := json.Unmarshal(line, &end); err != nil || !end.End {
				return 0, fmt.Errorf("%w: bad end line", ErrBadSnapshot)
			}
			if end.Rows != rows {
				return 0, fmt.Errorf("%w: %d rows arrived, the end line says %d", ErrBadSnapshot, rows, end.Rows)
			}
			return rows, flush()
		}
		var r snapshotRow
		if err := json.Unmarshal(line, &r); err != nil {
			return 0, fmt.Errorf("%w: line %d: %v", ErrBadSnapshot, rows+2, err)
		}
		t := snapshotTable(r.Table)
		if t == nil {
			return 0, fmt.Errorf("%w: line %d: table %q", ErrBadSnapshot, rows+2, r.Table)
		}
		cols, err := t.decodeRow(r.Row)
		if err != nil {
			return 0, fmt.Errorf("%w: line %d: %v", ErrBadSnapshot, rows+2, err)
		}
		if t != batchTable || len(batch) >= snapshotBatch || (len(batch) > 0 && len(cols) != len(batch[0])) {
			if err := flush(); err != nil {
				return 0, err
			}
			batchTable = t
		}
		batch = append(batch, cols)
		rows++
	}
}

// insertSnapshotBatch inserts rows of t as maps, so zero values stay
// (a struct insert would give zero fields their column defaults), and
// tells the caches about every row but logs.
func (tx *txn) insertSnapshotBatch(t *replicated, batch []map[string]any) error {
	if err := tx.db.Table(t.name).Create(batch).Error; err != nil {
		return fmt.Errorf("insert %s: %w", t.name, err)
	}
	if replicatedTable(t.name) == nil || t.appendOnly {
		return nil
	}
	for _, cols := range batch {
		c := store.Change{Table: t.name, Op: "INSERT"}
		switch k := cols[t.keyColumn].(type) {
		case int64:
			c.ID = k
		case string:
			c.Key = k
		}
		if err := tx.Record(c); err != nil {
			return err
		}
	}
	return nil
}

// afterSnapshot derives what does not travel (abilities, usage rollups),
// sets the applied marks to the snapshot's positions and moves this
// node's id counters past every id in the data, so a node that reuses a
// node id never hands out an id its earlier life used.
func (tx *txn) afterSnapshot(positions map[int]int64) error {
	if err := tx.RebuildDerived(); err != nil {
		return err
	}
	var latest int64
	if err := tx.db.Model(&rowVersion{}).Select("COALESCE(MAX(time_us), 0)").Scan(&latest).Error; err != nil {
		return err
	}
	tx.s.clock.observe(latest)
	now := time.Now().Unix()
	self := int(tx.s.nodeID)
	for node, id := range positions {
		if node == self {
			continue // this node's own events are never applied here
		}
		if err := tx.db.Create(&appliedMark{NodeID: node, EventID: id, UpdatedAt: now}).Error; err != nil {
			return err
		}
	}
	for _, t := range replicatedTables {
		if t.keyColumn != "id" {
			continue
		}
		var maxID int64
		if err := tx.db.Table(t.name).Select("COALESCE(MAX(id), 0)").Scan(&maxID).Error; err != nil {
			return err
		}
		if err := tx.RaiseSequence(t.name, maxID/idStride); err != nil {
			return err
		}
	}
	// Events this node id wrote in an earlier life were applied by the
	// source: new ones must come after them, or peers would skip them.
	return tx.RaiseSequence("cluster_events", positions[self]/idStride)
}
