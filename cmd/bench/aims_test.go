package main

import (
	"bytes"
	"strings"
	"testing"
)

// Issue 32's aims take the checks' figures: the ratios from 32 workers
// (not c = 1), the gateway+DB CPU instead of the gateway's alone in
// database mode, the streams' memory; a check without a figure is
// neither met nor missed.
func TestIssueAims(t *testing.T) {
	checks := []check{
		{Name: "throughput vs proxy", Concurrency: 1, Value: 0.95, Verdict: verdictPass},
		{Name: "CPU per request vs proxy", Concurrency: 1, Value: 0.9, Verdict: verdictPass},
		{Name: "throughput vs proxy", Concurrency: 32, Value: 1.5, Verdict: verdictPass},
		{Name: "CPU per request vs proxy", Concurrency: 32, Value: 0.61, Verdict: verdictPass},
		{Name: "gateway+DB CPU per request vs proxy", Concurrency: 32, Value: 0.95, Verdict: verdictReported},
		{Name: "MiB per 1,000 open streams", Value: 24.5, Verdict: verdictPass},
		{Name: "RSS after close ÷ idle", Value: 0.8, Verdict: verdictPass},
		{Name: "plan-billed throughput vs proxy", Concurrency: 64, Value: 1.2, Verdict: verdictPass},
		{Name: "rate-limited CPU per request vs proxy", Concurrency: 64, Value: nan(), Verdict: verdictNA},
	}
	type want struct {
		name          string
		c             int
		aim           float64
		met, measured bool
	}
	for _, tc := range []struct {
		db    bool
		wants []want
	}{
		{false, []want{
			{"throughput vs proxy", 32, 1.5, true, true},
			{"CPU per request vs proxy", 32, 0.6, false, true},
			{"gateway+DB CPU per request vs proxy", 32, 1.0, true, true},
			{"MiB per 1,000 open streams", 0, 24, false, true},
			{"RSS after close ÷ idle", 0, 1.1, true, true},
			{"plan-billed throughput vs proxy", 64, 1.5, false, true},
			{"rate-limited CPU per request vs proxy", 64, 0.6, false, false},
		}},
		{true, []want{
			{"throughput vs proxy", 32, 1.5, true, true},
			{"gateway+DB CPU per request vs proxy", 32, 1.0, true, true},
			{"MiB per 1,000 open streams", 0, 24, false, true},
			{"RSS after close ÷ idle", 0, 1.1, true, true},
			{"plan-billed throughput vs proxy", 64, 1.5, false, true},
		}},
	} {
		got := issueAims(checks, tc.db)
		if len(got) != len(tc.wants) {
			t.Fatalf("database mode %v: %d aims %+v, want %d", tc.db, len(got), got, len(tc.wants))
		}
		for i, w := range tc.wants {
			g := got[i]
			if g.Name != w.name || g.Concurrency != w.c || g.Aim != w.aim || g.Met != w.met || g.Measured != w.measured {
				t.Errorf("database mode %v, aim %d = %+v, want %+v", tc.db, i, g, w)
			}
		}
	}
	var out bytes.Buffer
	printAims(&out, issueAims(checks, false))
	lines := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		lines[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, line := range []string{"throughput vs proxy 32 1.50 ≥ 1.5 yes", "CPU per request vs proxy 32 0.61 ≤ 0.6 no",
		"MiB per 1,000 open streams 24.50 ≤ 24 no", "rate-limited CPU per request vs proxy 64 - ≤ 0.6 n/a"} {
		if !lines[line] {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}
