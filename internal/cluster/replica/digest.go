package replica

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/store"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// A digest summarises what this node holds of every replicated table, so
// two nodes can tell whether they converged without sending their rows
// (docs/cluster.md, Consistency check): per table the number of rows and a
// hash of their replicated columns, and the positions the data holds (as a
// snapshot's header), so a comparison can tell a difference from a node
// that has not caught up yet.
//
// What is hashed is what replicates, as it converges:
//   - rows a replicated event wrote: every row of a versioned table that has
//     a version (cluster_versions). A row without one was never written in
//     cluster mode — a node's seeds (its root, the seeded group prices) or a
//     single install's data from before — and never travels;
//   - logs (append-only, unversioned) of an id residue other than 0 (0 is
//     a single install's, from before cluster mode), but a node's
//     first-start log; none when CLUSTER_SYNC_LOGS is off;
//   - every column as an event carries it, but updated_at of the tables
//     with counters (a delta stamps it on its own node only), and the
//     balances with this node's holds in flight given back, as a snapshot
//     does (they leave the stored balance on PostgreSQL and MySQL, and
//     never replicate).
//
// Not hashed: the plan usage counters (an open hold or usage slice is in
// them on one node only, with no converged value to give back short of
// replaying the buckets: see docs/cluster.md), per-node tables
// (cluster_nodes, cursors, the outbox, holds, leases, keys), abilities and
// rollups (derived on each node) and the row versions (a stale event
// skipped on one node and applied on another shows in the rows
// themselves).

// digestPage is how many rows are read per query: the table is streamed,
// never held whole.
const digestPage = 1000

// TableDigest is one table's part of a Digest.
type TableDigest struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	// Hash is the hex sum, modulo 2^128, of the rows' SHA-256 (first 16
	// bytes): it does not depend on the order the rows are read in, which
	// differs between engines for text keys.
	Hash string `json:"hash"`
}

// Digest is a node's digest: its id, its positions (per origin node, the
// last of its events the data holds) and one entry per hashed table.
type Digest struct {
	NodeID    int              `json:"node_id"`
	Positions map[string]int64 `json:"positions"`
	Tables    []TableDigest    `json:"tables"`
}

// digestTables are the tables a digest covers, in the order it lists them.
func (s *Replica) digestTables() []*replicated {
	var out []*replicated
	for _, t := range replicatedTables {
		if t.name == "logs" && (s.outbox == nil || !s.outbox.logs) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Digest computes this node's digest in one consistent read-only
// transaction, as WriteSnapshot reads (so the positions and the rows
// agree), a page at a time.
func (s *Replica) Digest(ctx context.Context) (Digest, error) {
	d := Digest{NodeID: int(s.nodeID)}
	err := s.st.InReadTx(ctx, func(tx *store.Tx) error {
		db := tx.DB()
		var err error
		if d.Positions, err = snapshotPositions(db, s.nodeID); err != nil {
			return err
		}
		h, err := heldAmounts(db)
		if err != nil {
			return err
		}
		for _, t := range s.digestTables() {
			td, err := digestTable(db, t, h.giveBack)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			d.Tables = append(d.Tables, td)
		}
		return nil
	})
	return d, store.Wrap("digest", err)
}

// tableDigester hashes one table: rows are scanned straight into one
// reused value of the table's stored type (row, through dest), so no page
// of structs is built and a table of millions of rows costs its reading
// and hashing only.
type tableDigester struct {
	t         *replicated
	sch       *schema.Schema
	row       reflect.Value // *Model
	cols      []string
	dest      []any
	adjust    func(row any)
	versioned bool
	buf       []byte
}

func newTableDigester(t *replicated, adjust func(row any)) (*tableDigester, error) {
	sch, err := t.fields()
	if err != nil {
		return nil, err
	}
	d := &tableDigester{t: t, sch: sch, row: reflect.New(reflect.TypeOf(t.model).Elem()), adjust: adjust,
		versioned: !t.appendOnly}
	for _, f := range sch.Fields {
		if f.DBName == "" {
			continue
		}
		d.cols = append(d.cols, f.DBName)
		v := d.row.Elem().FieldByIndex(f.StructField.Index)
		if f.NotNull {
			d.dest = append(d.dest, v.Addr().Interface())
		} else {
			d.dest = append(d.dest, nullSafe{v})
		}
	}
	return d, nil
}

// digestTable hashes the replicated rows of t (above), page by page in key
// order.
func digestTable(db *gorm.DB, t *replicated, adjust func(row any)) (TableDigest, error) {
	td := TableDigest{Table: t.name}
	d, err := newTableDigester(t, adjust)
	if err != nil {
		return td, err
	}
	keys := make([]string, len(d.sch.PrimaryFields))
	for i, f := range d.sch.PrimaryFields {
		keys[i] = f.DBName
	}
	// Quoted: a table without a model is not quoted by GORM, and a column
	// may be a keyword on some engine (options.value).
	quoted := make([]string, len(d.cols))
	for i, c := range d.cols {
		quoted[i] = db.Statement.Quote(c)
	}
	var sum [2]uint64
	var after []any
	for {
		q := db.Table(t.name).Select(strings.Join(quoted, ", ")).Order(strings.Join(keys, ", ")).Limit(digestPage)
		if t.name == "logs" {
			q = q.Where(fmt.Sprintf("id %% %d <> 0", idStride)).
				Where("NOT (type = ? AND content IS NOT NULL AND content = ?)", store.LogSystem, store.FirstStartLog)
		}
		if after != nil {
			where, args := afterKey(keys, after)
			q = q.Where(where, args...)
		}
		hashes, rowKeys, last, err := d.page(q)
		if err != nil {
			return td, err
		}
		live := map[string]bool(nil)
		if d.versioned && len(rowKeys) > 0 {
			if live, err = versionedKeys(db, t.name, rowKeys); err != nil {
				return td, err
			}
		}
		for i, h := range hashes {
			if d.versioned && !live[rowKeys[i]] {
				continue
			}
			sum[0] += h[0]
			sum[1] += h[1]
			td.Rows++
		}
		if len(hashes) < digestPage {
			var out [16]byte
			binary.BigEndian.PutUint64(out[:8], sum[0])
			binary.BigEndian.PutUint64(out[8:], sum[1])
			td.Hash = hex.EncodeToString(out[:])
			return td, nil
		}
		after = last
	}
}

// page reads one page of q and returns each row's hash, its key as
// cluster_versions holds it (when versioned) and the key of the last row.
func (d *tableDigester) page(q *gorm.DB) (hashes [][2]uint64, rowKeys []string, last []any, err error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		d.row.Elem().SetZero()
		if err := rows.Scan(d.dest...); err != nil {
			return nil, nil, nil, err
		}
		if d.versioned {
			rowKeys = append(rowKeys, rowKeyOf(d.t, d.sch, d.row.Elem()))
		}
		d.adjust(d.row.Interface())
		d.buf = appendRow(d.buf[:0], d.t, d.sch, d.row.Elem())
		h := sha256.Sum256(d.buf)
		hashes = append(hashes, [2]uint64{binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:16])})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, err
	}
	last = make([]any, len(d.sch.PrimaryFields))
	for i, f := range d.sch.PrimaryFields {
		last[i] = d.row.Elem().FieldByIndex(f.StructField.Index).Interface()
	}
	return hashes, rowKeys, last, nil
}

// rowKeyOf is a row's key as cluster_versions stores it.
func rowKeyOf(t *replicated, sch *schema.Schema, row reflect.Value) string {
	v := row.FieldByIndex(sch.LookUpField(t.keyColumn).StructField.Index).Interface()
	switch k := v.(type) {
	case int64:
		return strconv.FormatInt(k, 10)
	case string:
		return k
	}
	return fmt.Sprint(v)
}

// versionedKeys returns which of keys have a version: rows a replicated
// event wrote.
func versionedKeys(db *gorm.DB, table string, keys []string) (map[string]bool, error) {
	var found []string
	err := db.Model(&rowVersion{}).Where("table_name = ? AND row_key IN ?", table, keys).Pluck("row_key", &found).Error
	live := make(map[string]bool, len(found))
	for _, k := range found {
		live[k] = true
	}
	return live, err
}

// appendRow appends the canonical form of a row's replicated columns:
// name, then value, each length-prefixed, in the model's field order, so
// two nodes on different engines write the same bytes for the same row.
func appendRow(buf []byte, t *replicated, sch *schema.Schema, row reflect.Value) []byte {
	for _, f := range sch.Fields {
		if f.DBName == "" || (f.DBName == "updated_at" && len(t.counters) > 0) {
			continue
		}
		buf = appendText(buf, f.DBName)
		buf = appendValue(buf, row.FieldByIndex(f.StructField.Index))
	}
	return buf
}

func appendText(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendValue(buf []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return append(buf, 'n')
		}
		return appendValue(append(buf, 'p'), v.Elem())
	case reflect.String:
		return appendText(append(buf, 's'), v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(append(buf, 'i'), v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(append(buf, 'u'), v.Uint())
	case reflect.Bool:
		if v.Bool() {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case reflect.Float32, reflect.Float64:
		return binary.BigEndian.AppendUint64(append(buf, 'd'), math.Float64bits(v.Float()))
	}
	// Anything else as an event carries it.
	raw, _ := json.Marshal(v.Interface())
	return appendText(append(buf, 'j'), string(raw))
}

// nullSafe scans a column into a field of a basic type, NULL as the zero
// value (as GORM reads it: some text columns are nullable).
type nullSafe struct{ v reflect.Value }

func (n nullSafe) Scan(src any) error {
	if src == nil {
		n.v.SetZero()
		return nil
	}
	switch n.v.Kind() {
	case reflect.String:
		var x sql.NullString
		err := x.Scan(src)
		n.v.SetString(x.String)
		return err
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var x sql.NullInt64
		err := x.Scan(src)
		n.v.SetInt(x.Int64)
		return err
	case reflect.Bool:
		var x sql.NullBool
		err := x.Scan(src)
		n.v.SetBool(x.Bool)
		return err
	case reflect.Float32, reflect.Float64:
		var x sql.NullFloat64
		err := x.Scan(src)
		n.v.SetFloat(x.Float64)
		return err
	case reflect.Pointer:
		var x sql.NullString
		if err := x.Scan(src); err != nil {
			return err
		}
		p := reflect.New(n.v.Type().Elem())
		p.Elem().SetString(x.String)
		n.v.Set(p)
		return nil
	}
	return fmt.Errorf("digest: cannot scan into %s", n.v.Type())
}
