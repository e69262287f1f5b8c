package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/store"

	"gorm.io/gorm"
)

// A snapshot is what a new node loads to join a cluster (docs/cluster.md,
// Joining a new node): newline-delimited JSON, written by WriteSnapshot on
// a peer and read by LoadSnapshot on the new node.
//
//	{"node_id":1,"positions":{"1":1051,"2":902}}   first line
//	{"table":"users","row":{...}}                   one line per row
//	{"end":true,"rows":1234}                        last line
//
// positions are, per origin node, the last of its events the data holds:
// the source's applied marks, and its own last event. Events at or below
// them are already in the rows; the joiner skips them when peers push.

// snapshotPage is how many rows of a table are read per query.
const snapshotPage = 500

// snapshotHeader is the first line of a snapshot.
type snapshotHeader struct {
	NodeID    int              `json:"node_id"`
	Positions map[string]int64 `json:"positions"`
}

// snapshotRow is a row line.
type snapshotRow struct {
	Table string          `json:"table"`
	Row   json.RawMessage `json:"row"`
}

// snapshotEnd is the last line: it says the stream is whole.
type snapshotEnd struct {
	End  bool  `json:"end"`
	Rows int64 `json:"rows"`
}

// planUsageRow and planUsageTotalRow are the plan usage counters
// (migration 0009): they travel as delta events, so a joiner copies them.
type planUsageRow struct {
	SubscriptionID int64  `gorm:"primaryKey;autoIncrement:false"`
	Model          string `gorm:"primaryKey"`
	Span           int64  `gorm:"primaryKey;autoIncrement:false"`
	BucketStart    int64  `gorm:"primaryKey;autoIncrement:false"`
	Requests       int64
	Tokens         int64
}

func (planUsageRow) TableName() string { return "plan_usage" }

type planUsageTotalRow struct {
	SubscriptionID int64 `gorm:"primaryKey;autoIncrement:false"`
	Requests       int64
	Tokens         int64
}

func (planUsageTotalRow) TableName() string { return "plan_usage_totals" }

// snapshotState is the per-node state a joiner needs beyond the replicated
// rows: the usage counters, and the row versions and parked deltas that make
// the events pushed after the snapshot apply as they did on the source.
// They reuse the replicated tables' row coding.
var snapshotState = []*replicated{
	{name: "plan_usage", model: &planUsageRow{}, keyColumn: "subscription_id"},
	{name: "plan_usage_totals", model: &planUsageTotalRow{}, keyColumn: "subscription_id"},
	{name: "cluster_versions", model: &rowVersion{}, keyColumn: "table_name"},
	{name: "cluster_parked", model: &parkedDelta{}, keyColumn: "event_id"},
}

// snapshotTable returns how table travels in a snapshot, or nil.
func snapshotTable(table string) *replicated {
	if t := replicatedTable(table); t != nil {
		return t
	}
	for _, t := range snapshotState {
		if t.name == table {
			return t
		}
	}
	return nil
}

// WriteSnapshot writes this node's data as a snapshot (above), one line
// per emit call, all read in one consistent read-only transaction: on
// PostgreSQL and MySQL at REPEATABLE READ, on SQLite a read transaction of
// WAL mode. So the rows and the positions agree, and writers are not held
// up. Logs are included when they replicate (CLUSTER_SYNC_LOGS). Rows are
// read a page at a time, never all at once.
func (s *Replica) WriteSnapshot(ctx context.Context, emit func(line []byte) error) error {
	err := s.st.InReadTx(ctx, func(tx *store.Tx) error {
		db := tx.DB()
		positions, err := snapshotPositions(db, s.nodeID)
		if err != nil {
			return err
		}
		if err := emitJSON(emit, snapshotHeader{NodeID: int(s.nodeID), Positions: positions}); err != nil {
			return err
		}
		held, err := heldAmounts(db)
		if err != nil {
			return err
		}
		var rows int64
		for _, t := range append(append([]*replicated{}, replicatedTables...), snapshotState...) {
			if t.name == "logs" && (s.outbox == nil || !s.outbox.logs) {
				continue
			}
			n, err := emitTable(db, t, held.giveBack, emit)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			rows += n
		}
		return emitJSON(emit, snapshotEnd{End: true, Rows: rows})
	})
	return store.Wrap("write snapshot", err)
}

// snapshotPositions reads, per origin node, the last event the data holds:
// the applied marks, and this node's own last event from its id counter
// (the outbox may be pruned empty; the counter moves only with committed
// events).
func snapshotPositions(db *gorm.DB, self int64) (map[string]int64, error) {
	var marks []appliedMark
	if err := db.Find(&marks).Error; err != nil {
		return nil, err
	}
	positions := make(map[string]int64, len(marks)+1)
	for _, m := range marks {
		positions[strconv.Itoa(m.NodeID)] = m.EventID
	}
	seq, err := store.SequenceValue(db, "cluster_events")
	if err != nil {
		return nil, err
	}
	if seq > 0 {
		positions[strconv.FormatInt(self, 10)] = seq*idStride + self
	}
	return positions, nil
}

// held is the money held for calls in flight on this node, by user and by
// limited key (the reservations of a server database; SQLite holds in
// memory). Holds never replicate, only settled costs (docs/cluster.md), so
// a snapshot shows balances with them given back: the joiner later gets
// each call's cost alone, as every other peer does.
type held struct{ users, tokens map[int64]int64 }

func heldAmounts(db *gorm.DB) (held, error) {
	h := held{users: map[int64]int64{}, tokens: map[int64]int64{}}
	var rows []struct{ ID, Amount int64 }
	if err := db.Raw("SELECT user_id AS id, SUM(amount) AS amount FROM reservations GROUP BY user_id").Scan(&rows).Error; err != nil {
		return h, err
	}
	for _, r := range rows {
		h.users[r.ID] = r.Amount
	}
	rows = nil
	if err := db.Raw("SELECT token_id AS id, SUM(amount) AS amount FROM reservations WHERE token_limited = ? AND token_id <> 0 GROUP BY token_id", true).Scan(&rows).Error; err != nil {
		return h, err
	}
	for _, r := range rows {
		h.tokens[r.ID] = r.Amount
	}
	return h, nil
}

// giveBack adds the held amounts to a users or tokens row.
func (h held) giveBack(row any) {
	switch r := row.(type) {
	case *store.User:
		r.Quota += h.users[r.ID]
	case *store.Token:
		r.RemainQuota += h.tokens[r.ID]
	}
}

// emitTable writes every row of t, page by page in key order (each page
// starts after the last key of the one before), with counters; adjust
// changes a row before it is written.
func emitTable(db *gorm.DB, t *replicated, adjust func(row any), emit func([]byte) error) (int64, error) {
	sch, err := t.fields()
	if err != nil {
		return 0, err
	}
	keys := make([]string, len(sch.PrimaryFields))
	for i, f := range sch.PrimaryFields {
		keys[i] = f.DBName
	}
	order := strings.Join(keys, ", ")
	var after []any // the key of the last row sent
	var n int64
	for {
		page := reflect.New(reflect.SliceOf(reflect.TypeOf(t.model).Elem()))
		q := db.Table(t.name).Order(order).Limit(snapshotPage)
		if after != nil {
			where, args := afterKey(keys, after)
			q = q.Where(where, args...)
		}
		if err := q.Find(page.Interface()).Error; err != nil {
			return n, err
		}
		rows := page.Elem()
		for i := 0; i < rows.Len(); i++ {
			row := rows.Index(i).Addr().Interface()
			adjust(row)
			data, err := t.encodeRow(row, true)
			if err != nil {
				return n, err
			}
			if err := emitJSON(emit, snapshotRow{Table: t.name, Row: data}); err != nil {
				return n, err
			}
			n++
		}
		if rows.Len() < snapshotPage {
			return n, nil
		}
		last := rows.Index(rows.Len() - 1)
		after = make([]any, len(sch.PrimaryFields))
		for i, f := range sch.PrimaryFields {
			after[i] = last.FieldByIndex(f.StructField.Index).Interface()
		}
	}
}

// afterKey is the condition "(keys) > (values)" in key order, written out
// so every engine runs it: a > ? OR (a = ? AND b > ?) OR ...
func afterKey(keys []string, values []any) (string, []any) {
	var ors []string
	var args []any
	for i := range keys {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, keys[j]+" = ?")
			args = append(args, values[j])
		}
		ands = append(ands, keys[i]+" > ?")
		args = append(args, values[i])
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return strings.Join(ors, " OR "), args
}

func emitJSON(emit func([]byte) error, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return emit(line)
}
