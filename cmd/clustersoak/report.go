package main

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/modelgate/modelgate/internal/samples"
)

// maxPrinted bounds the difference lines printed; the count is always
// printed.
const maxPrinted = 500

// printReport writes the figures, the calls and the comparison.
func printReport(out io.Writer, r *result) {
	p := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	load := r.loadEnd.Sub(r.loadStart)
	p("cluster soak: %d nodes (SQLite), load %.1fs, %d workers and at most %s per node, %d CPUs",
		nodeCount, load.Seconds(), r.o.Workers, rateText(r.o.Rate), runtime.NumCPU())
	if r.source != "" {
		p("binary: built from %s", r.source)
	}
	if !r.killedAt.IsZero() {
		p("node %d: SIGKILL at +%.1fs (%s), restarted at +%.1fs (%s; serving %.2fs after start), caught up %s after restart",
			r.o.KillNode, r.killedAt.Sub(r.loadStart).Seconds(), r.killedAt.UTC().Format(time.TimeOnly),
			r.restartedAt.Sub(r.loadStart).Seconds(), r.restartedAt.UTC().Format(time.TimeOnly),
			r.restartReady.Seconds(), catchUpText(r.catchUp))
	}

	ok, failed := r.stats.totals()
	p("\ncalls: %d succeeded, %d failed (%.0f calls/s)", ok, failed, float64(ok+failed)/load.Seconds())
	p("  %-20s %8s %8s  first failure", "operation", "ok", "failed")
	for _, name := range r.stats.names() {
		c := r.stats.ops[name]
		p("  %-20s %8d %8d  %s", name, c.ok, c.failed, c.firstError)
	}

	var events int64
	ids := make([]int, 0, len(r.events))
	for id, c := range r.events {
		events += c
		ids = append(ids, id)
	}
	sort.Ints(ids)
	p("\nreplication:")
	p("  events written during the load: %d (%s) = %.0f events/s; each is delivered to %d peers: %.0f deliveries/s",
		events, perNode(ids, r.events), float64(events)/load.Seconds(), nodeCount-1, float64(events*(nodeCount-1))/load.Seconds())
	p("  lag (write acknowledged on one node → visible on another; %d timeouts, %d probe writes failed):", r.lagTimeouts, r.probeErrors)
	any := func(int) bool { return true }
	restarted := func(n int) bool { return n == r.o.KillNode }
	others := func(n int) bool { return n != r.o.KillNode }
	phases := []struct {
		name     string
		from, to time.Time
		reader   func(int) bool
	}{
		{"whole load", time.Time{}, time.Time{}, any},
		{"3 nodes up, before the kill", time.Time{}, r.killedAt, any},
		{"node down", r.killedAt, r.restartedAt, any},
		{"after restart, other nodes", r.restartedAt, time.Time{}, others},
		{"after restart, restarted", r.restartedAt, time.Time{}, restarted},
	}
	for i, ph := range phases {
		if i > 0 && r.killedAt.IsZero() {
			break
		}
		l := lagsBetween(r.lags, ph.from, ph.to, ph.reader)
		p("    %-28s %4d samples: p50 %7.1f ms, p99 %7.1f ms, max %7.1f ms", ph.name, len(l),
			samples.Millis(samples.Percentile(l, 50)), samples.Millis(samples.Percentile(l, 99)), samples.Millis(samples.Percentile(l, 100)))
	}
	if r.unackedLeft > 0 {
		p("  NOT SETTLED: %d events still unacknowledged after %.1fs", r.unackedLeft, r.drain.Seconds())
	} else {
		p("  settled %.1fs after the load ended (every event acknowledged by every peer)", r.drain.Seconds())
	}
	p("  parked deltas left: %s", perNode(ids, r.parked))
	for _, e := range r.stopErrors {
		p("  stop: %s", e)
	}

	p("\ncomparison (after a clean stop, each node's SQLite file):")
	for _, t := range comparedTables {
		note := ""
		if t.derived {
			note = " (derived on each node)"
		}
		if s := r.skipped[t.name]; s > 0 {
			note += fmt.Sprintf(", %d per-node seed rows not compared", s)
		}
		p("  %-18s %7d rows%s", t.name, r.compared[t.name], note)
	}
	if len(r.diffs) == 0 {
		p("verdict: SAME — every compared row is identical on the 3 nodes")
		return
	}
	p("verdict: DIFFERENT — %d differences:", len(r.diffs))
	for i, d := range r.diffs {
		if i == maxPrinted {
			p("  … %d more", len(r.diffs)-maxPrinted)
			break
		}
		p("  %s", d)
	}
}

func perNode(ids []int, m map[int]int64) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("node %d: %d", id, m[id])
	}
	return s
}

func catchUpText(d time.Duration) string {
	if d == 0 {
		return "(not measured)"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func rateText(rate int) string {
	if rate == 0 {
		return "unpaced"
	}
	return fmt.Sprintf("%d operations/s", rate)
}
