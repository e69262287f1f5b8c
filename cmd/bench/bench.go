package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// run measures every target and reports. The JSON report is written even
// when the run breaks, with what was measured and the error.
func run(ctx context.Context, o options, stdout, progress io.Writer) error {
	rep := newReport(o)
	err := measure(ctx, o, rep, progress)
	rep.finish(err)
	if err == nil {
		printReport(stdout, rep)
	}
	if werr := rep.write(o.Out); werr != nil {
		return fmt.Errorf("write %s: %w (run: %v)", o.Out, werr, err)
	}
	fmt.Fprintf(progress, "bench: wrote %s\n", o.Out)
	return err
}

// measure starts the processes, warms every target up, holds streams open
// through each, then runs the load rounds.
func measure(ctx context.Context, o options, rep *report, progress io.Writer) error {
	logf := func(format string, a ...any) { fmt.Fprintf(progress, "bench: "+format+"\n", a...) }
	var err error
	if rep.NoFile, err = raiseNoFileLimit(uint64(2*o.Streams + 1024)); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "modelgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := openBenchDatabase(ctx, o, rep, logf)
	if err != nil {
		return err
	}
	if db != nil {
		// Deferred before the gateway's stop, so it runs after it.
		defer func() {
			logf("dropping database %s", db.name)
			if err := db.drop(); err != nil {
				rep.Database.DropError = err.Error()
				logf("drop database %s: %v", db.name, err)
			}
		}()
	}

	mock, err := startChild(ctx, modeMock)
	if err != nil {
		return err
	}
	defer mock.stop(5 * time.Second)
	mockBase := "http://" + mock.addr
	proxy, err := startChild(ctx, modeProxy, "-target="+mockBase)
	if err != nil {
		return err
	}
	defer proxy.stop(5 * time.Second)
	conns := max(o.StreamConcurrency, maxOf(o.Concurrency))
	targets := []*target{
		{name: "mock", proc: mock, base: mockBase, client: newLoadClient(conns)},
		{name: "proxy", proc: proxy, base: "http://" + proxy.addr, client: newLoadClient(conns)},
	}
	gw, plan, limits := setupGateway(ctx, o, dir, mockBase, db, rep, logf)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if gw.proc != nil {
		defer gw.proc.stop(10 * time.Second)
	}
	gw.client, plan.client, limits.client = newLoadClient(conns), newLoadClient(conns), newLoadClient(conns)
	targets = append(targets, gw, plan, limits)
	full, chatOnly := 0.0, 0.0
	for _, t := range targets {
		switch {
		case t.skip != "":
		case t.chatOnly:
			chatOnly++
		default:
			full++
		}
	}
	logf("measuring %g targets, about %s", full+chatOnly, o.estimate(full, chatOnly).Round(time.Second))

	if err := warmUp(ctx, o, targets, mock, rep); err != nil {
		return err
	}
	for _, t := range targets {
		if t.skip != "" || t.chatOnly {
			continue
		}
		logf("holding %d streams open through %s", o.Streams, t.name)
		m, err := holdStreams(ctx, t, mockBase, o.Streams, seconds(o.SettleSeconds), rep.IdleKiB[t.name])
		if gatewayGone(t, err) {
			continue
		}
		if err != nil {
			return err
		}
		rep.Memory = append(rep.Memory, m)
	}
	return loadRounds(ctx, o, targets, mock, rep, logf)
}

// setupGateway builds (or takes) the gateway binary, starts it, seeds it and
// probes its relay, with the balance user's key (target gateway), the plan
// user's key (target gateway-plan) and the rate-limited key (target
// gateway-limits): the same process and base URL. Whatever fails there is
// the target's status in the report, not an error of the bench, so mock
// and proxy are still measured.
func setupGateway(ctx context.Context, o options, dir, mockBase string, db *benchDatabase, rep *report, logf func(string, ...any)) (gw, plan, limits *target) {
	info := &rep.Gateway
	gw = &target{name: targetGateway, status: &info.Status}
	plan = &target{name: targetPlan, status: &rep.GatewayPlan.Status, chatOnly: true}
	limits = &target{name: targetLimits, status: &rep.GatewayLimits.Status, chatOnly: true}
	extras := []struct {
		t    *target
		info *planInfo
		seed func(ctx context.Context, base, rootToken string) (string, error)
	}{{plan, &rep.GatewayPlan, seedPlanUser}, {limits, &rep.GatewayLimits, seedLimitsUser}}
	defer func() {
		// The chat-only targets are measured only along with the gateway.
		for _, x := range extras {
			if gw.skip != "" && x.t.skip == "" {
				x.info.Status, x.t.skip = "not measured (gateway: "+shortStatus(info.Status)+")", "not measured"
			}
		}
	}()
	info.Binary = o.GatewayBin
	if info.Binary == "" {
		logf("building ./cmd/modelgate")
		start := time.Now()
		bin, source, err := gatewayproc.Build(ctx, dir)
		info.BuildSeconds = time.Since(start).Seconds()
		if err != nil {
			info.Status, gw.skip = "build failed: "+err.Error(), "build failed"
			return gw, plan, limits
		}
		info.Binary, info.Source = bin, source
	}
	secrets := newGatewaySecrets()
	sqlDSN := ""
	if db != nil {
		sqlDSN = db.gatewayDSN
	}
	p, logPath, err := startGateway(ctx, info.Binary, filepath.Join(dir, "gateway"), secrets, sqlDSN)
	if err != nil {
		info.Status, gw.skip, info.LogTail = "start failed: "+err.Error(), "start failed", logTail(logPath)
		return gw, plan, limits
	}
	gw.proc, gw.base, gw.metricsToken, gw.dbComms = p, "http://"+p.addr, secrets.metricsToken, rep.Database.ServerProcesses
	for _, x := range extras {
		x.t.proc, x.t.base, x.t.metricsToken, x.t.dbComms = gw.proc, gw.base, gw.metricsToken, gw.dbComms
	}
	if gw.key, err = seedGateway(ctx, gw.base, secrets.rootToken, mockBase); err != nil {
		info.Status, gw.skip, info.LogTail = "seeding failed: "+err.Error(), "seeding failed", logTail(logPath)
		return gw, plan, limits
	}
	// A failure to seed a chat-only target's user takes only that target out.
	for _, x := range extras {
		if x.t.key, err = x.seed(ctx, gw.base, secrets.rootToken); err != nil {
			x.info.Status, x.t.skip, x.info.LogTail = "seeding failed: "+err.Error(), "seeding failed", logTail(logPath)
			logf("%s: %s", x.t.name, x.info.Status)
		}
	}
	gw.client = newLoadClient(4)
	if status, detail := probeRelay(ctx, gw); status != "" {
		info.Status, gw.skip = status+" ("+detail+")", status
		info.LogTail = logTail(logPath)
		logf("gateway: %s", info.Status)
		return gw, plan, limits
	}
	info.Status = gatewayMeasured
	// A relay that does not serve a target (a plan it does not bill, key
	// limits it refuses) is reported as answering errors, and the run goes
	// on without that target.
	for _, x := range extras {
		if x.t.skip != "" {
			continue
		}
		x.t.client = newLoadClient(4)
		if status, detail := probeRelay(ctx, x.t); status != "" {
			x.info.Status, x.t.skip = status+" ("+detail+")", status
			logf("%s: %s", x.t.name, x.info.Status)
			continue
		}
		x.info.Status = gatewayMeasured
	}
	return gw, plan, limits
}

// openBenchDatabase creates the run's fresh database in database mode (nil
// on SQLite) and finds the server's processes, whose CPU is read with the
// gateway's. A server that is not on this machine is measured without its
// CPU.
func openBenchDatabase(ctx context.Context, o options, rep *report, logf func(string, ...any)) (*benchDatabase, error) {
	if o.DSN == "" {
		return nil, nil
	}
	db, err := planDatabase(o.DSN, newBenchDatabaseName())
	if err != nil {
		return nil, err
	}
	rep.Database.Engine, rep.Database.Name = string(db.engine), db.name
	logf("creating database %s on the %s server", db.name, db.engine)
	if err := db.create(ctx); err != nil {
		return nil, fmt.Errorf("create the bench database: %w", err)
	}
	comms := serverComms(db.engine)
	if _, n, err := serverCPUTicks(comms); err != nil {
		logf("database server CPU not measured: %v", err)
	} else {
		rep.Database.ServerProcesses = comms
		logf("database server: %d processes named %s", n, strings.Join(comms, " or "))
	}
	return db, nil
}

// warmUp loads every target briefly, then reads its idle RSS. The mock and
// the proxy must answer without errors; otherwise the bench is broken.
func warmUp(ctx context.Context, o options, targets []*target, mock *proc, rep *report) error {
	d := seconds(o.WarmupSeconds)
	for _, t := range targets {
		if t.skip != "" {
			continue
		}
		scenarios := []scenario{{"chat", false, maxOf(o.Concurrency)}, {"stream", true, o.StreamConcurrency}}
		if t.chatOnly {
			scenarios = scenarios[:1]
		}
		for _, sc := range scenarios {
			res, err := runLoad(ctx, t, mock, sc, d)
			if gatewayGone(t, err) {
				break
			}
			if err != nil {
				return err
			}
			if res.Errors > 0 && t.status == nil {
				return fmt.Errorf("warm-up of %s: %d errors, first: %s", t.name, res.Errors, res.FirstError)
			}
			rep.Rounds = append(rep.Rounds, res)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the warm-up's connections go idle
	for _, t := range targets {
		if t.proc == nil || t.proc.exited() || t.chatOnly { // gateway-plan: the gateway's process
			continue
		}
		kib, err := procRSSKiB(t.proc.pid())
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		rep.IdleKiB[t.name] = kib
	}
	return ctx.Err()
}

// loadRounds runs every scenario on every target, round after round; within
// a round the targets take turns scenario by scenario, and the order of the
// turns rotates each round, so drift of the machine hits all targets alike.
func loadRounds(ctx context.Context, o options, targets []*target, mock *proc, rep *report, logf func(string, ...any)) error {
	var scenarios []scenario
	for _, c := range o.Concurrency {
		scenarios = append(scenarios, scenario{"chat", false, c})
	}
	scenarios = append(scenarios, scenario{"stream", true, o.StreamConcurrency})
	d := seconds(o.DurationSeconds)
	for round := 1; round <= o.Rounds; round++ {
		order := rotate(targets, round-1)
		for _, sc := range scenarios {
			for _, t := range order {
				if t.skip != "" || (sc.stream && t.chatOnly) {
					continue
				}
				res, err := runLoad(ctx, t, mock, sc, d)
				if gatewayGone(t, err) {
					continue
				}
				if err != nil {
					return err
				}
				res.Round = round
				rep.Rounds = append(rep.Rounds, res)
				logf("round %d/%d %-6s c=%-3d %-12s %8.0f req/s  p50 %6.2f ms  %6.0f µs CPU/req  %d errors",
					round, o.Rounds, sc.name, sc.concurrency, t.name, float64(res.ReqPerSec), float64(res.P50ms),
					float64(res.CPUMicrosPerReq), res.Errors)
			}
		}
	}
	return ctx.Err()
}

// gatewayGone reports whether err came from the gateway having exited, and
// if so takes the target (gateway or gateway-plan) out of the run: a
// crashing gateway is a finding, not a broken bench.
func gatewayGone(t *target, err error) bool {
	if err == nil || t.status == nil || t.proc == nil || !t.proc.exited() {
		return false
	}
	t.skip = "exited during the run"
	*t.status = fmt.Sprintf("exited during the run (%v)", t.proc.err)
	return true
}

// rotate returns ts starting at index k.
func rotate[T any](ts []T, k int) []T {
	k %= len(ts)
	return append(append([]T(nil), ts[k:]...), ts[:k]...)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
