package main

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	_ "github.com/ncruces/go-sqlite3/driver" // the sqlite3 database/sql driver the store uses
)

// tableSpec is a table the soak compares across the nodes.
type tableSpec struct {
	name string
	key  []string // the columns naming a row
	// skip are columns not compared: a derived row's local id.
	skip []string
	// versioned tables have cluster_versions rows: a seed row (written
	// before replication started) is compared only once it was changed
	// under replication.
	versioned bool
	// derived tables are not replicated: each node computes them from
	// replicated rows (abilities from channels, rollups from logs).
	derived bool
}

// comparedTables are every replicated table (internal/cluster/replica/tables.go),
// the plan usage counters (replicated as deltas) and the tables each node
// derives from replicated rows.
var comparedTables = []tableSpec{
	{name: "users", key: []string{"id"}, versioned: true},
	{name: "tokens", key: []string{"id"}, versioned: true},
	{name: "channels", key: []string{"id"}, versioned: true},
	{name: "model_prices", key: []string{"id"}, versioned: true},
	{name: "group_prices", key: []string{"id"}, versioned: true},
	{name: "options", key: []string{"option_key"}, versioned: true},
	{name: "plans", key: []string{"id"}, versioned: true},
	{name: "user_plans", key: []string{"id"}, versioned: true},
	{name: "orders", key: []string{"id"}, versioned: true},
	{name: "redemptions", key: []string{"id"}, versioned: true},
	{name: "logs", key: []string{"id"}},
	{name: "plan_usage", key: []string{"subscription_id", "model", "span", "bucket_start"}},
	{name: "plan_usage_totals", key: []string{"subscription_id"}},
	{name: "abilities", key: []string{"ability_group", "model", "channel_id"}, skip: []string{"id"}, derived: true},
	{name: "usage_day_models", key: []string{"day_start", "model_name"}, derived: true},
	{name: "usage_day_users", key: []string{"day_start", "user_id"}, derived: true},
}

// tableRows is a table's rows by key, each column → value as text.
type tableRows map[string]map[string]string

// openDB opens a node's SQLite file read-only; the node may be running
// (WAL lets a reader in beside the writer).
func openDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite3", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
}

// readTable reads every row of t.
func readTable(db *sql.DB, t tableSpec) (tableRows, error) {
	rows, err := db.Query("SELECT * FROM " + t.name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := tableRows{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s: %w", t.name, err)
		}
		row := make(map[string]string, len(cols))
		for i, c := range cols {
			if slices.Contains(t.skip, c) {
				continue
			}
			switch v := vals[i].(type) {
			case nil:
				row[c] = "NULL"
			case []byte:
				row[c] = string(v)
			default:
				row[c] = fmt.Sprint(v)
			}
		}
		out[rowKey(t, row)] = row
	}
	return out, rows.Err()
}

// rowKey joins the key columns of row.
func rowKey(t tableSpec, row map[string]string) string {
	parts := make([]string, len(t.key))
	for i, k := range t.key {
		parts[i] = row[k]
	}
	return strings.Join(parts, "/")
}

// readKeys reads the keys of every compared table of a node: its seeds,
// read before replication starts.
func readKeys(path string) (map[string]map[string]bool, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	keys := map[string]map[string]bool{}
	for _, t := range comparedTables {
		rows, err := readTable(db, t)
		if err != nil {
			return nil, err
		}
		keys[t.name] = map[string]bool{}
		for k := range rows {
			keys[t.name][k] = true
		}
	}
	return keys, nil
}

// readVersioned reads the rows a node holds a last-writer-wins version of,
// as table → row key.
func readVersioned(db *sql.DB) (map[string]map[string]bool, error) {
	rows, err := db.Query("SELECT table_name, row_key FROM cluster_versions")
	if err != nil {
		return nil, fmt.Errorf("read cluster_versions: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var t, k string
		if err := rows.Scan(&t, &k); err != nil {
			return nil, err
		}
		if out[t] == nil {
			out[t] = map[string]bool{}
		}
		out[t][k] = true
	}
	return out, rows.Err()
}

// diffTable compares one table's rows of every node (index i is node i+1)
// and returns one line per difference: a row missing on some nodes, or a
// column whose values differ. Keys for which skip is true are not
// compared; compared counts the others.
func diffTable(table string, nodes []tableRows, skip func(key string) bool) (diffs []string, compared, skipped int) {
	keys := map[string]bool{}
	for _, rows := range nodes {
		for k := range rows {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		if skip != nil && skip(k) {
			skipped++
			continue
		}
		compared++
		var have, missing []string
		for i, rows := range nodes {
			if _, ok := rows[k]; ok {
				have = append(have, fmt.Sprint(i+1))
			} else {
				missing = append(missing, fmt.Sprint(i+1))
			}
		}
		if len(missing) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s %s: only on node %s, missing on node %s", table, k,
				strings.Join(have, ","), strings.Join(missing, ",")))
			continue
		}
		diffs = append(diffs, diffColumns(table, k, nodes)...)
	}
	return diffs, compared, skipped
}

// diffColumns compares row k, present on every node, column by column.
func diffColumns(table, k string, nodes []tableRows) []string {
	cols := map[string]bool{}
	for _, rows := range nodes {
		for c := range rows[k] {
			cols[c] = true
		}
	}
	names := make([]string, 0, len(cols))
	for c := range cols {
		names = append(names, c)
	}
	slices.Sort(names)
	var diffs []string
	for _, c := range names {
		first := nodes[0][k][c]
		same := true
		for _, rows := range nodes[1:] {
			if rows[k][c] != first {
				same = false
			}
		}
		if same {
			continue
		}
		vals := make([]string, len(nodes))
		for i, rows := range nodes {
			vals[i] = fmt.Sprintf("node%d=%s", i+1, abbreviateValue(rows[k][c]))
		}
		diffs = append(diffs, fmt.Sprintf("%s %s: %s: %s", table, k, c, strings.Join(vals, " ")))
	}
	return diffs
}

// abbreviateValue keeps a difference line readable; hashes and long texts
// are cut.
func abbreviateValue(v string) string {
	if len(v) > 40 {
		return v[:37] + "…"
	}
	return v
}
