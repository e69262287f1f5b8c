package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
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
	gw := setupGateway(ctx, o, dir, mockBase, &rep.Gateway, logf)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if gw.proc != nil {
		defer gw.proc.stop(10 * time.Second)
	}
	gw.client = newLoadClient(conns)
	targets = append(targets, gw)
	measured := 0.0
	for _, t := range targets {
		if t.skip == "" {
			measured++
		}
	}
	logf("measuring %g targets, about %s", measured, o.estimate(measured).Round(time.Second))

	if err := warmUp(ctx, o, targets, mock, rep); err != nil {
		return err
	}
	for _, t := range targets {
		if t.skip != "" {
			continue
		}
		logf("holding %d streams open through %s", o.Streams, t.name)
		m, err := holdStreams(ctx, t, mockBase, o.Streams, seconds(o.SettleSeconds), rep.IdleKiB[t.name])
		if gatewayGone(t, err, &rep.Gateway) {
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
// probes its relay. Whatever fails there is the gateway's status in the
// report, not an error of the bench, so mock and proxy are still measured.
func setupGateway(ctx context.Context, o options, dir, mockBase string, info *gatewayInfo, logf func(string, ...any)) *target {
	t := &target{name: "gateway"}
	info.Binary = o.GatewayBin
	if info.Binary == "" {
		logf("building ./cmd/modelgate")
		start := time.Now()
		bin, source, err := buildGateway(ctx, dir)
		info.BuildSeconds = time.Since(start).Seconds()
		if err != nil {
			info.Status, t.skip = "build failed: "+err.Error(), "build failed"
			return t
		}
		info.Binary, info.Source = bin, source
	}
	secrets := newGatewaySecrets()
	p, logPath, err := startGateway(ctx, info.Binary, filepath.Join(dir, "gateway"), secrets)
	if err != nil {
		info.Status, t.skip, info.LogTail = "start failed: "+err.Error(), "start failed", logTail(logPath)
		return t
	}
	t.proc, t.base = p, "http://"+p.addr
	if t.key, err = seedGateway(ctx, t.base, secrets.rootToken, mockBase); err != nil {
		info.Status, t.skip, info.LogTail = "seeding failed: "+err.Error(), "seeding failed", logTail(logPath)
		return t
	}
	t.client = newLoadClient(4)
	if status, detail := probeRelay(ctx, t); status != "" {
		info.Status, t.skip = status+" ("+detail+")", status
		info.LogTail = logTail(logPath)
		logf("gateway: %s", info.Status)
		return t
	}
	info.Status = gatewayMeasured
	return t
}

// warmUp loads every target briefly, then reads its idle RSS. The mock and
// the proxy must answer without errors; otherwise the bench is broken.
func warmUp(ctx context.Context, o options, targets []*target, mock *proc, rep *report) error {
	d := seconds(o.WarmupSeconds)
	for _, t := range targets {
		if t.skip != "" {
			continue
		}
		for _, sc := range []scenario{{"chat", false, maxOf(o.Concurrency)}, {"stream", true, o.StreamConcurrency}} {
			res, err := runLoad(ctx, t, mock, sc, d)
			if gatewayGone(t, err, &rep.Gateway) {
				break
			}
			if err != nil {
				return err
			}
			if res.Errors > 0 && t.name != "gateway" {
				return fmt.Errorf("warm-up of %s: %d errors, first: %s", t.name, res.Errors, res.FirstError)
			}
			rep.Rounds = append(rep.Rounds, res)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the warm-up's connections go idle
	for _, t := range targets {
		if t.proc == nil || t.proc.exited() {
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
				if t.skip != "" {
					continue
				}
				res, err := runLoad(ctx, t, mock, sc, d)
				if gatewayGone(t, err, &rep.Gateway) {
					continue
				}
				if err != nil {
					return err
				}
				res.Round = round
				rep.Rounds = append(rep.Rounds, res)
				logf("round %d/%d %-6s c=%-3d %-7s %8.0f req/s  p50 %6.2f ms  %6.0f µs CPU/req  %d errors",
					round, o.Rounds, sc.name, sc.concurrency, t.name, float64(res.ReqPerSec), float64(res.P50ms),
					float64(res.CPUMicrosPerReq), res.Errors)
			}
		}
	}
	return ctx.Err()
}

// gatewayGone reports whether err came from the gateway having exited, and
// if so takes it out of the run: a crashing gateway is a finding, not a
// broken bench.
func gatewayGone(t *target, err error, info *gatewayInfo) bool {
	if err == nil || t.name != "gateway" || t.proc == nil || !t.proc.exited() {
		return false
	}
	t.skip = "exited during the run"
	info.Status = fmt.Sprintf("exited during the run (%v)", t.proc.err)
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
