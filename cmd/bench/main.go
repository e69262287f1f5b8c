// Command bench measures the gateway against the targets in docs/performance.md: a
// zero-latency mock upstream alone, the standard library's reverse proxy in
// front of it (the floor), and the modelgate binary in front of it (also
// with calls only a plan pays: target gateway-plan), under
// the same load, alternating targets round by round. It prints a table and
// writes every raw figure to a JSON file. See docs/performance.md.
//
// Usage:
//
//	go run ./cmd/bench          # about 3 minutes
//	go run ./cmd/bench -quick   # about 30 s
//	go run ./cmd/bench -quick -dsn 'postgres://user@127.0.0.1:5432/postgres'   # database mode
//
// The exit status is 0 whatever the figures are; it is 1 only when the
// bench itself could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the bench's flags, echoed in the JSON report.
type options struct {
	Quick             bool    `json:"quick"`
	Concurrency       []int   `json:"concurrency"`
	StreamConcurrency int     `json:"stream_concurrency"`
	DurationSeconds   float64 `json:"duration_seconds"` // of one target in one round
	Rounds            int     `json:"rounds"`
	WarmupSeconds     float64 `json:"warmup_seconds"`
	Streams           int     `json:"streams"`
	SettleSeconds     float64 `json:"settle_seconds"`
	Out               string  `json:"out"`
	GatewayBin        string  `json:"gateway_bin,omitempty"`
	// Database is the engine of -dsn (postgres, mysql); empty on SQLite.
	Database string `json:"database,omitempty"`
	// DSN is -dsn or BENCH_DSN; never written (it may carry a password).
	DSN string `json:"-"`
}

// Bounds of the flags, so a typo cannot start an unbounded run.
const (
	maxConcurrency = 1024
	maxStreams     = 5000
	maxRounds      = 20
	maxDuration    = 60 * time.Second
)

func main() {
	mode := flag.String("mode", "", "internal: run as the mock or the proxy")
	addr := flag.String("addr", "127.0.0.1:0", "internal: listen address of -mode")
	upstream := flag.String("target", "", "internal: upstream of -mode=proxy")
	quick := flag.Bool("quick", false, "short run (1 round of 1 s per target and scenario), about 30 s")
	conc := flag.String("c", "1,32,64", "comma-separated concurrencies of the chat load")
	streamConc := flag.Int("stream-c", 16, "concurrency of the streaming load")
	dur := flag.Duration("d", 3*time.Second, "duration of one target's load in one round (-quick: 1s)")
	rounds := flag.Int("rounds", 3, "rounds; each measures every target once per scenario (-quick: 1)")
	streams := flag.Int("streams", 1000, "streams held open for the memory figure")
	settle := flag.Duration("settle", 2*time.Second, "wait after the held streams close before reading RSS again")
	out := flag.String("out", "bench-results.json", "JSON report with every raw figure")
	gatewayBin := flag.String("gateway-bin", "", "use this modelgate binary instead of building ./cmd/modelgate")
	dsnFlag := flag.String("dsn", "", "database mode: run the gateway on a fresh database of this PostgreSQL or MySQL/MariaDB server (SQL_DSN forms; default $"+envDSN+", empty: SQLite)")
	flag.Parse()

	if *mode != "" {
		if err := serveChild(*mode, *addr, *upstream); err != nil {
			fmt.Fprintln(os.Stderr, "bench "+*mode+":", err)
			os.Exit(1)
		}
		return
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick && !set["d"] {
		*dur = time.Second
	}
	if *quick && !set["rounds"] {
		*rounds = 1
	}
	o := options{Quick: *quick, StreamConcurrency: *streamConc, DurationSeconds: dur.Seconds(), Rounds: *rounds,
		Streams: *streams, SettleSeconds: settle.Seconds(), Out: *out, GatewayBin: *gatewayBin}
	o.WarmupSeconds = 1
	if *quick {
		o.WarmupSeconds = 0.5
	}
	if !set["dsn"] {
		*dsnFlag = os.Getenv(envDSN)
	}
	var err error
	if o.DSN = strings.TrimSpace(*dsnFlag); o.DSN != "" {
		var d *benchDatabase
		if d, err = planDatabase(o.DSN, newBenchDatabaseName()); err == nil {
			o.Database = string(d.engine)
		}
	}
	if err == nil {
		o.Concurrency, err = parseConcurrency(*conc)
	}
	if err == nil {
		err = o.validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The run stops by itself even if a target hangs: every phase is bounded
	// and this deadline bounds the whole.
	ctx, cancel := context.WithTimeout(ctx, o.estimate(3, 1)+5*time.Minute)
	defer cancel()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// parseConcurrency reads "1,32,64".
func parseConcurrency(s string) ([]int, error) {
	var cs []int
	for _, f := range strings.Split(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > maxConcurrency {
			return nil, fmt.Errorf("-c: %q is not a concurrency from 1 to %d", f, maxConcurrency)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func (o options) validate() error {
	var problems []string
	if o.StreamConcurrency < 1 || o.StreamConcurrency > maxConcurrency {
		problems = append(problems, fmt.Sprintf("-stream-c must be from 1 to %d", maxConcurrency))
	}
	if d := time.Duration(o.DurationSeconds * float64(time.Second)); d < 100*time.Millisecond || d > maxDuration {
		problems = append(problems, fmt.Sprintf("-d must be from 100ms to %s", maxDuration))
	}
	if o.Rounds < 1 || o.Rounds > maxRounds {
		problems = append(problems, fmt.Sprintf("-rounds must be from 1 to %d", maxRounds))
	}
	if o.Streams < 1 || o.Streams > maxStreams {
		problems = append(problems, fmt.Sprintf("-streams must be from 1 to %d", maxStreams))
	}
	if o.SettleSeconds < 0 || o.SettleSeconds > 30 {
		problems = append(problems, "-settle must be from 0 to 30s")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// estimate is the expected length of a run measuring that many targets
// with every load and that many with the chat loads only (gateway-plan),
// not counting the gateway build.
func (o options) estimate(full, chatOnly float64) time.Duration {
	loads := float64(len(o.Concurrency)+1)*full + float64(len(o.Concurrency))*chatOnly
	load := float64(o.Rounds) * loads * o.DurationSeconds
	warm := (full*1.5 + chatOnly*0.75) * o.WarmupSeconds
	hold := full * (o.SettleSeconds + 2)
	return time.Duration((load + warm + hold) * float64(time.Second))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
