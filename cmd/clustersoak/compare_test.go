package main

import (
	"slices"
	"testing"
)

func TestDiffTable(t *testing.T) {
	row := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	nodes := []tableRows{
		{"1": row("id", "1", "quota", "5"), "2": row("id", "2", "name", "a"), "seed": row("id", "seed")},
		{"1": row("id", "1", "quota", "5"), "2": row("id", "2", "name", "b")},
		{"1": row("id", "1", "quota", "7"), "2": row("id", "2", "name", "a"), "3": row("id", "3")},
	}
	diffs, compared, skipped := diffTable("users", nodes, func(k string) bool { return k == "seed" })
	want := []string{
		"users 1: quota: node1=5 node2=5 node3=7",
		"users 2: name: node1=a node2=b node3=a",
		"users 3: only on node 3, missing on node 1,2",
	}
	if !slices.Equal(diffs, want) {
		t.Errorf("diffs:\n%q\nwant\n%q", diffs, want)
	}
	if compared != 3 || skipped != 1 {
		t.Errorf("compared %d, skipped %d; want 3, 1", compared, skipped)
	}
	same := []tableRows{{"1": row("id", "1")}, {"1": row("id", "1")}, {"1": row("id", "1")}}
	if diffs, _, _ := diffTable("users", same, nil); len(diffs) != 0 {
		t.Errorf("equal tables: diffs %q", diffs)
	}
}

func TestRowKey(t *testing.T) {
	spec := tableSpec{name: "plan_usage", key: []string{"subscription_id", "model", "span"}}
	got := rowKey(spec, map[string]string{"subscription_id": "51", "model": "m", "span": "600", "requests": "3"})
	if got != "51/m/600" {
		t.Errorf("rowKey = %q, want 51/m/600", got)
	}
}

func TestAbbreviateValue(t *testing.T) {
	if got := abbreviateValue("short"); got != "short" {
		t.Errorf("short value changed: %q", got)
	}
	long := "0123456789012345678901234567890123456789xyz"
	if got := abbreviateValue(long); got != long[:37]+"…" {
		t.Errorf("long value: %q", got)
	}
}
