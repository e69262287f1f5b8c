package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printReport writes the human-readable tables.
func printReport(w io.Writer, r *report) {
	o := r.Flags
	fmt.Fprintf(w, "modelgate bench  %s  %d CPUs  %s  rounds=%d × %gs  c=%s  stream-c=%d  streams=%d\n",
		r.Machine.Date, r.Machine.NumCPU, r.Machine.GoVersion, o.Rounds, o.DurationSeconds,
		joinInts(o.Concurrency), o.StreamConcurrency, o.Streams)
	fmt.Fprintf(w, "gateway: %s\n", r.Gateway.Status)
	fmt.Fprintf(w, "gateway-plan (the gateway, calls billed to a plan): %s\n", r.GatewayPlan.Status)
	fmt.Fprintf(w, "gateway-limits (the gateway, a key with RPM, TPM and concurrency limits): %s\n", r.GatewayLimits.Status)
	dbMode := o.Database != ""
	if dbMode {
		procs := "its CPU not measured (no server process on this machine)"
		if len(r.Database.ServerProcesses) > 0 {
			procs = "server processes " + strings.Join(r.Database.ServerProcesses, ", ")
		}
		fmt.Fprintf(w, "database: %s, fresh database %s, %s\n\n", r.Database.Engine, r.Database.Name, procs)
	} else {
		fmt.Fprintf(w, "database: SQLite (in the gateway's process)\n\n")
	}

	const loadRow = "%-14s %-7s %4s %9s %8s %8s %7s %11s %16s %9s"
	const dbCols = " %14s %22s"
	header := []any{"target", "load", "c", "req/s", "p50 ms", "p99 ms", "errors", "CPU µs/req", "mock CPU µs/req", "DB RT/req"}
	fmt.Fprintf(w, loadRow, header...)
	if dbMode {
		fmt.Fprintf(w, dbCols, "DB CPU µs/req", "gateway+DB CPU µs/req")
	}
	fmt.Fprintln(w)
	for _, s := range r.Summary {
		c := strconv.Itoa(s.Concurrency)
		if s.Skipped != "" {
			fmt.Fprintf(w, "%-14s %-7s %4s  %s\n", s.Target, s.Scenario, c, s.Skipped)
			continue
		}
		fmt.Fprintf(w, loadRow, s.Target, s.Scenario, c, show(s.ReqPerSec, 0), show(s.P50ms, 2), show(s.P99ms, 2),
			strconv.Itoa(s.Errors), show(s.CPUMicrosPerReq, 0), show(s.UpstreamCPUMicrosPerReq, 0), show(s.DBRoundTripsPerReq, 2))
		if dbMode {
			fmt.Fprintf(w, dbCols, show(s.DBCPUMicrosPerReq, 0), show(s.GatewayDBCPUMicrosPerReq, 0))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "(stream: p50/p99 are the time to the first byte of the body; mock CPU is the upstream's, not counted in CPU µs/req;")
	fmt.Fprintln(w, " DB RT/req: statements the gateway sent to its database per request, from its modelgate_db_round_trips_total)")
	fmt.Fprintln(w)
	printAdded(w, r.Added)

	const memRow = "%-8s %9s %9s %17s %17s %13s %11s %19s\n"
	fmt.Fprintf(w, memRow, "target", "idle MiB", "held MiB", "MiB/1000 streams", "upstream freed s", fmt.Sprintf("after +%gs MiB", o.SettleSeconds),
		"≤ idle+10%", "upstream left open")
	for _, name := range []string{"mock", "proxy", "gateway"} {
		m, ok := findMem(r.Memory, name)
		if !ok {
			why := "not measured"
			if name == "gateway" && r.Gateway.Status != gatewayMeasured {
				why = shortStatus(r.Gateway.Status)
			}
			idle := "-"
			if kib, ok := r.IdleKiB[name]; ok {
				idle = mib(kib)
			}
			fmt.Fprintf(w, "%-8s %9s  %s\n", name, idle, why)
			continue
		}
		fmt.Fprintf(w, memRow, name, mib(m.IdleKiB), mib(m.HeldKiB), show(m.MiBPer1000, 1), strconv.FormatFloat(m.UpstreamReleaseSeconds, 'f', 1, 64), mib(m.AfterKiB),
			yesNo(m.BackToIdle), strconv.FormatInt(m.UpstreamStillHeld, 10))
		if m.Error != "" {
			fmt.Fprintf(w, "%-8s %s\n", "", m.Error)
		}
	}
	fmt.Fprintln(w)

	nameWidth := len("check (targets)")
	for _, c := range r.Checks {
		nameWidth = max(nameWidth, utf8.RuneCountInString(c.Name))
	}
	checkRow := "%-" + strconv.Itoa(nameWidth) + "s %4s %9s %9s %7s %8s  %s\n"
	fmt.Fprintf(w, checkRow, "check (targets)", "c", "gateway", "proxy", "value", "target", "verdict")
	for _, c := range r.Checks {
		conc := concurrencyText(c.Concurrency)
		limit := boundText(c.Limit, c.AtLeast)
		if c.Verdict == verdictReported {
			limit = "-"
		}
		verdict := c.Verdict
		if c.Note != "" {
			verdict += " (" + c.Note + ")"
		}
		fmt.Fprintf(w, checkRow, c.Name, conc, show(c.Gateway, 1), show(c.Proxy, 1), show(c.Value, 2),
			limit, verdict)
	}
	fmt.Fprintln(w)
	printAims(w, r.Aims)
}

// concurrencyText is a row's concurrency, blank for a figure of none (memory).
func concurrencyText(c int) string {
	if c > 0 {
		return strconv.Itoa(c)
	}
	return ""
}

// boundText writes a limit or an aim with its direction: "≥ 0.9", "≤ 24".
func boundText(limit float64, atLeast bool) string {
	op := "≤ "
	if atLeast {
		op = "≥ "
	}
	return op + strconv.FormatFloat(limit, 'f', -1, 64)
}

// show formats a figure, "-" when missing.
func show(f figure, decimals int) string {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func mib(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func findMem(ms []memResult, target string) (memResult, bool) {
	for _, m := range ms {
		if m.Target == target {
			return m, true
		}
	}
	return memResult{}, false
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
