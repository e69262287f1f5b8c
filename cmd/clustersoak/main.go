// Command clustersoak runs three modelgate nodes as a cluster under mixed
// writes and relay calls for a bounded time, kills one node with SIGKILL in
// the middle and restarts it on its data, then waits for replication to
// settle, stops the nodes and compares every replicated table across their
// SQLite files. It prints the figures (events replicated per second,
// replication lag p50/p99, calls made, kill and restart times) and every
// difference, row by row. See docs/performance.md, Cluster soak.
//
// Usage:
//
//	go run ./cmd/clustersoak                 # about 60 s of load, 2 min in all
//	go run ./cmd/clustersoak -duration 20s
//
// The exit status is 0 when the tables agree, 1 when they differ or the
// soak could not run, 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// options are the soak's flags.
type options struct {
	Duration   time.Duration
	Workers    int // per node
	Rate       int // operations per second per node; 0: unpaced
	KillNode   int
	GatewayBin string
	Keep       bool // keep the temp dir (node logs and databases)
}

// Bounds of the flags, so a typo cannot start an unbounded run.
const (
	minDuration = 10 * time.Second
	maxDuration = 30 * time.Minute
	maxWorkers  = 32
	nodeCount   = 3
)

func main() {
	var o options
	flag.DurationVar(&o.Duration, "duration", 60*time.Second, "length of the load (the kill is at 35%, the restart at 65%)")
	flag.IntVar(&o.Workers, "workers", 4, "concurrent load workers per node")
	flag.IntVar(&o.Rate, "rate", 50, "operations started per second on each node (0: as fast as the workers go)")
	flag.IntVar(&o.KillNode, "kill", 2, "node killed and restarted in the middle (2 or 3)")
	flag.StringVar(&o.GatewayBin, "gateway-bin", "", "use this modelgate binary instead of building ./cmd/modelgate")
	flag.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (node logs and databases) and print its path")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "clustersoak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Every phase is bounded; this deadline bounds the whole even if a node hangs.
	ctx, cancel := context.WithTimeout(ctx, o.Duration+5*time.Minute)
	defer cancel()
	same, err := run(ctx, o, os.Stdout)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "clustersoak:", err)
	}
	if err != nil || !same {
		cancel()
		stop()
		os.Exit(1)
	}
}

func (o options) validate() error {
	var problems []string
	if o.Duration < minDuration || o.Duration > maxDuration {
		problems = append(problems, fmt.Sprintf("-duration must be from %s to %s", minDuration, maxDuration))
	}
	if o.Workers < 1 || o.Workers > maxWorkers {
		problems = append(problems, fmt.Sprintf("-workers must be from 1 to %d", maxWorkers))
	}
	if o.Rate < 0 || o.Rate > 10000 {
		problems = append(problems, "-rate must be from 0 to 10000")
	}
	if o.KillNode < 2 || o.KillNode > nodeCount {
		problems = append(problems, fmt.Sprintf("-kill must be from 2 to %d (node 1 holds the seeds)", nodeCount))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
