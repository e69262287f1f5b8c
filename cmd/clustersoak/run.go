package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// When the kill and the restart happen, as fractions of the load.
const (
	killAt    = 0.35
	restartAt = 0.65
)

// result is what the run measured, for the report.
type result struct {
	o                        options
	source                   string
	loadStart, loadEnd       time.Time
	killedAt, restartedAt    time.Time
	restartReady             time.Duration // from start to serving
	catchUp                  time.Duration // from serving to the last marker seen; 0 when not seen
	catchUpDone              chan struct{} // closed once catchUp is measured; nil when not restarted
	stats                    *opStats
	lags                     []lagSample
	lagTimeouts, probeErrors int
	events                   map[int]int64
	drain                    time.Duration
	unackedLeft              int64
	parked                   map[int]int64
	diffs                    []string
	compared, skipped        map[string]int
	stopErrors               []string
}

// run builds the binary, starts the cluster, seeds it, loads it with the
// kill and restart, lets it settle, stops it and compares. same is true
// when every table agrees.
func run(ctx context.Context, o options, out io.Writer) (same bool, err error) {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "clustersoak: "+format+"\n", a...) }
	dir, err := os.MkdirTemp("", "modelgate-soak-")
	if err != nil {
		return false, err
	}
	if o.Keep {
		logf("keeping %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	res := &result{o: o, stats: newOpStats()}
	bin := o.GatewayBin
	if bin == "" {
		logf("building ./cmd/modelgate")
		if bin, res.source, err = gatewayproc.Build(ctx, dir); err != nil {
			return false, err
		}
	}
	upstream, stopUpstream, err := startUpstream()
	if err != nil {
		return false, err
	}
	defer stopUpstream()

	s := newSecrets()
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			n.stop(5 * time.Second)
		}
	}()
	for id := 1; id <= nodeCount; id++ {
		n, err := newNode(id, bin, dir, s)
		if err != nil {
			return false, err
		}
		if err := n.start(ctx); err != nil {
			return false, err
		}
		nodes = append(nodes, n)
	}
	seeds := make([]map[string]map[string]bool, len(nodes))
	for i, n := range nodes {
		if seeds[i], err = readKeys(n.dbPath()); err != nil {
			return false, fmt.Errorf("node %d: read seeds: %w", n.id, err)
		}
	}
	if err := register(ctx, nodes); err != nil {
		return false, err
	}
	logf("3 nodes up; seeding")
	w, err := seed(ctx, nodes, upstream)
	if err != nil {
		return false, err
	}
	startIDs, err := lastEventIDs(nodes)
	if err != nil {
		return false, err
	}

	logf("load for %s, %d workers and %d operations/s per node; node %d is killed at %.0f%% and restarted at %.0f%%",
		o.Duration, o.Workers, o.Rate, o.KillNode, killAt*100, restartAt*100)
	probe := &lagProbe{w: w}
	loadCtx, stopLoad := context.WithTimeout(ctx, o.Duration)
	defer stopLoad()
	res.loadStart = time.Now()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); runLoad(loadCtx, w, o.Workers, o.Rate, res.stats) }()
	go func() { defer wg.Done(); probe.run(loadCtx) }()
	if err := killAndRestart(loadCtx, ctx, nodes[o.KillNode-1], probe, res); err != nil {
		stopLoad()
		wg.Wait()
		return false, err
	}
	wg.Wait()
	res.loadEnd = time.Now()
	res.lags, res.lagTimeouts, res.probeErrors = probe.result()

	if res.catchUpDone != nil {
		<-res.catchUpDone
	}
	logf("load done; waiting for replication to settle")
	res.drain, res.unackedLeft, err = quiesce(ctx, nodes)
	if err != nil {
		return false, err
	}
	if res.events, err = eventCounts(nodes, startIDs, res.loadEnd.Unix()); err != nil {
		return false, err
	}
	for _, n := range nodes {
		if err := n.stop(15 * time.Second); err != nil {
			res.stopErrors = append(res.stopErrors, err.Error())
		}
	}
	logf("nodes stopped; comparing")
	if err := compareNodes(nodes, seeds, res); err != nil {
		return false, err
	}
	printReport(out, res)
	return len(res.diffs) == 0, nil
}

// killAndRestart SIGKILLs n at killAt of the load and starts it again on
// its data and port at restartAt, then measures how long it takes to show
// the newest probe marker written while it was down.
func killAndRestart(loadCtx, ctx context.Context, n *node, probe *lagProbe, res *result) error {
	d := res.o.Duration
	if !sleepUntil(loadCtx, res.loadStart.Add(time.Duration(float64(d)*killAt))) {
		return nil
	}
	res.killedAt = time.Now()
	n.kill()
	fmt.Fprintf(os.Stderr, "clustersoak: node %d killed (SIGKILL) at +%.1fs\n", n.id, res.killedAt.Sub(res.loadStart).Seconds())
	if !sleepUntil(loadCtx, res.loadStart.Add(time.Duration(float64(d)*restartAt))) {
		// The load ended first: restart anyway, the comparison needs it.
		return n.start(ctx)
	}
	start := time.Now()
	last := probe.lastMarker()
	if err := n.start(ctx); err != nil {
		return err
	}
	res.restartedAt = time.Now()
	res.restartReady = res.restartedAt.Sub(start)
	fmt.Fprintf(os.Stderr, "clustersoak: node %d restarted at +%.1fs\n", n.id, res.restartedAt.Sub(res.loadStart).Seconds())
	// Measured beside the load, which goes on meanwhile.
	res.catchUpDone = make(chan struct{})
	go func() {
		defer close(res.catchUpDone)
		if last.writer == nil {
			return
		}
		if seen, ok := probe.waitMarker(ctx, n, last, 2*time.Minute); ok {
			res.catchUp = seen.Sub(res.restartedAt)
		}
	}()
	return nil
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// compareNodes reads every compared table of every stopped node and diffs
// them. A row that was a node's seed and has no version on any node (never
// changed under replication) is not compared: seeds are per node.
func compareNodes(nodes []*node, seeds []map[string]map[string]bool, res *result) error {
	res.compared, res.skipped, res.parked = map[string]int{}, map[string]int{}, map[int]int64{}
	dbs := make([]*sql.DB, len(nodes))
	versioned := map[string]map[string]bool{}
	for i, n := range nodes {
		db, err := openDB(n.dbPath())
		if err != nil {
			return err
		}
		defer db.Close()
		dbs[i] = db
		v, err := readVersioned(db)
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		for t, keys := range v {
			if versioned[t] == nil {
				versioned[t] = map[string]bool{}
			}
			for k := range keys {
				versioned[t][k] = true
			}
		}
		st, err := readOutbox(db)
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		res.parked[n.id] = st.parked
	}
	for _, t := range comparedTables {
		all := make([]tableRows, len(nodes))
		for i, db := range dbs {
			rows, err := readTable(db, t)
			if err != nil {
				return fmt.Errorf("node %d: %w", nodes[i].id, err)
			}
			all[i] = rows
		}
		skip := func(key string) bool {
			seed := false
			for _, s := range seeds {
				seed = seed || s[t.name][key]
			}
			return seed && !(t.versioned && versioned[t.name][key])
		}
		diffs, compared, skipped := diffTable(t.name, all, skip)
		res.diffs = append(res.diffs, diffs...)
		res.compared[t.name], res.skipped[t.name] = compared, skipped
	}
	return nil
}
