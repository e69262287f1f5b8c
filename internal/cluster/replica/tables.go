package replica

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"github.com/modelgate/modelgate/internal/store"

	"gorm.io/gorm/schema"
)

// replicated describes how one table replicates (docs/cluster.md,
// Replication). Abilities are not listed: every node derives them from the
// replicated channel, in the transaction that applies it.
type replicated struct {
	name string
	// model is a pointer to the stored type of the table's rows.
	model any
	// keyColumn is the primary key: "id", or "option_key" for options.
	keyColumn string
	// intKey marks a key column other than "id" that is an integer (the
	// change's ID, not its Key, names the row): received_payments'
	// order_id.
	intKey bool
	// counters are the balance and usage columns: they replicate as delta
	// events only, so an UPDATE event leaves them alone on the receiver.
	counters []string
	// appendOnly rows are written once and never updated (logs): no
	// last-writer-wins version is kept for them.
	appendOnly bool

	once   sync.Once
	schema *schema.Schema
	err    error
}

var replicatedTables = []*replicated{
	{name: "users", model: &store.User{}, keyColumn: "id", counters: []string{"quota", "used_quota", "request_count"}},
	{name: "tokens", model: &store.Token{}, keyColumn: "id", counters: []string{"remain_quota", "used_quota", "accessed_time"}},
	{name: "channels", model: &store.Channel{}, keyColumn: "id", counters: []string{"used_quota"}},
	{name: "model_prices", model: &store.ModelPrice{}, keyColumn: "id"},
	{name: "group_prices", model: &store.GroupPrice{}, keyColumn: "id"},
	{name: "options", model: &store.Option{}, keyColumn: "option_key"},
	{name: "plans", model: &store.Plan{}, keyColumn: "id"},
	{name: "user_plans", model: &store.UserPlan{}, keyColumn: "id"},
	{name: "orders", model: &store.Order{}, keyColumn: "id"},
	{name: "received_payments", model: &store.ReceivedPayment{}, keyColumn: "order_id", intKey: true},
	{name: "payment_exceptions", model: &store.PaymentException{}, keyColumn: "id"},
	{name: "redemptions", model: &store.Redemption{}, keyColumn: "id"},
	{name: "logs", model: &store.Log{}, keyColumn: "id", appendOnly: true},
}

// replicatedTable returns the description of table, or nil when the
// table does not replicate.
func replicatedTable(table string) *replicated {
	for _, t := range replicatedTables {
		if t.name == table {
			return t
		}
	}
	return nil
}

var schemaCache sync.Map

func (t *replicated) fields() (*schema.Schema, error) {
	t.once.Do(func() {
		t.schema, t.err = schema.Parse(t.model, &schemaCache, schema.NamingStrategy{})
	})
	return t.schema, t.err
}

func (t *replicated) isCounter(col string) bool {
	for _, c := range t.counters {
		if c == col {
			return true
		}
	}
	return false
}

// encodeRow writes row (a pointer to the table's stored type) as a JSON
// object of column → value. withCounters false leaves the counter columns
// out (an UPDATE event). Secrets (password and key hashes, channel keys)
// are part of the row: every node must accept the same logins and keys.
// They travel only between nodes, under the cluster secret, and no log
// line prints an event's data.
func (t *replicated) encodeRow(row any, withCounters bool) ([]byte, error) {
	sch, err := t.fields()
	if err != nil {
		return nil, err
	}
	rv := reflect.Indirect(reflect.ValueOf(row))
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for _, f := range sch.Fields {
		if f.DBName == "" || (!withCounters && t.isCounter(f.DBName)) {
			continue
		}
		v, err := json.Marshal(rv.FieldByIndex(f.StructField.Index).Interface())
		if err != nil {
			return nil, fmt.Errorf("encode %s.%s: %w", t.name, f.DBName, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(f.DBName)
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// decodeRow reads an event's row object into column → typed value, for the
// columns the table has (others are ignored: a newer peer may send more).
// Each value is decoded into its field's Go type, so a peer on another
// engine writes the same value here.
func (t *replicated) decodeRow(data []byte) (map[string]any, error) {
	sch, err := t.fields()
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("row of %s: %w", t.name, err)
	}
	cols := make(map[string]any, len(raw))
	for _, f := range sch.Fields {
		r, ok := raw[f.DBName]
		if !ok || f.DBName == "" {
			continue
		}
		v := reflect.New(f.FieldType)
		if err := json.Unmarshal(r, v.Interface()); err != nil {
			return nil, fmt.Errorf("row of %s: column %s: %w", t.name, f.DBName, err)
		}
		if s, ok := v.Elem().Interface().(string); ok && !store.ValidText(s) {
			return nil, fmt.Errorf("row of %s: column %s: not valid UTF-8 text", t.name, f.DBName)
		}
		cols[f.DBName] = v.Elem().Interface()
	}
	key, ok := cols[t.keyColumn]
	if !ok {
		return nil, fmt.Errorf("row of %s: no %s", t.name, t.keyColumn)
	}
	if s, isText := key.(string); isText && s == "" {
		return nil, fmt.Errorf("row of %s: empty %s", t.name, t.keyColumn)
	}
	return cols, nil
}

// fill sets the fields of row (a pointer to the table's stored type) from
// decoded columns.
func (t *replicated) fill(row any, cols map[string]any) error {
	sch, err := t.fields()
	if err != nil {
		return err
	}
	rv := reflect.Indirect(reflect.ValueOf(row))
	for _, f := range sch.Fields {
		if v, ok := cols[f.DBName]; ok && f.DBName != "" {
			rv.FieldByIndex(f.StructField.Index).Set(reflect.ValueOf(v))
		}
	}
	return nil
}

// integerKey reports whether rows are named by an integer key (the
// change's ID) rather than a text one (its Key).
func (t *replicated) integerKey() bool { return t.keyColumn == "id" || t.intKey }

// rowKey is the key of a row as cluster_versions stores it.
func (t *replicated) rowKey(id int64, key string) string {
	if t.integerKey() {
		return strconv.FormatInt(id, 10)
	}
	return key
}

// keyValue is the key for a WHERE clause.
func (t *replicated) keyValue(id int64, key string) any {
	if t.integerKey() {
		return id
	}
	return key
}
