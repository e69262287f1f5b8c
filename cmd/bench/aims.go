package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Issue 32's targets for the gateway, reported beside the checks. The
// checks (stats.go) are the bench's pass/fail gates, set where a
// regression shows on a shared machine; the aims are where the gateway is
// meant to get to, and a run reports how far it is from each without
// failing on it (like the added-latency aims, added.go).
const (
	aimMinThroughputRatio = 1.5  // gateway req/s ÷ proxy req/s, at 32 and more workers
	aimMaxCPURatio        = 0.6  // gateway CPU per call ÷ proxy's, at 32 and more workers
	aimMaxDBCPURatio      = 1.0  // database mode: gateway + database CPU per call ÷ proxy's
	aimMaxMiBPer1000      = 24.0 // MiB per 1,000 open streams
	aimMaxRSSReturn       = 1.10 // RSS after the streams close ÷ idle
	aimMinConcurrency     = 32   // the throughput and CPU aims hold from this many workers
)

// aimRow is one of issue 32's targets against the figure a run measured.
type aimRow struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency,omitempty"`
	Value       figure  `json:"value"`
	Aim         float64 `json:"aim"`
	AtLeast     bool    `json:"at_least"`
	// Met: the value is within the aim. Measured is false when the
	// figure is missing (a target not measured, an error): neither met
	// nor missed.
	Met      bool `json:"met"`
	Measured bool `json:"measured"`
}

// issueAims holds the checks' figures against issue 32's targets: the
// throughput and CPU ratios of every gateway target (balance-billed,
// plan-billed, rate-limited) at aimMinConcurrency workers and more, in
// database mode the gateway and its database's CPU instead of the
// gateway's alone, and the open streams' memory.
func issueAims(checks []check, dbMode bool) []aimRow {
	var out []aimRow
	add := func(c check, aim float64, atLeast bool) {
		a := aimRow{Name: c.Name, Concurrency: c.Concurrency, Value: c.Value, Aim: aim, AtLeast: atLeast}
		v := float64(c.Value)
		a.Measured = c.Verdict != verdictNA && !math.IsNaN(v) && !math.IsInf(v, 0)
		a.Met = a.Measured && (atLeast && v >= aim || !atLeast && v <= aim)
		out = append(out, a)
	}
	for _, c := range checks {
		ratio := c.Concurrency >= aimMinConcurrency
		switch {
		case ratio && strings.HasSuffix(c.Name, "throughput vs proxy"):
			add(c, aimMinThroughputRatio, true)
		case ratio && strings.HasSuffix(c.Name, "gateway+DB CPU per request vs proxy"):
			add(c, aimMaxDBCPURatio, false)
		case ratio && !dbMode && strings.HasSuffix(c.Name, "CPU per request vs proxy"):
			add(c, aimMaxCPURatio, false)
		case c.Name == "MiB per 1,000 open streams":
			add(c, aimMaxMiBPer1000, false)
		case c.Name == "RSS after close ÷ idle":
			add(c, aimMaxRSSReturn, false)
		}
	}
	return out
}

// printAims writes the aims table.
func printAims(w io.Writer, rows []aimRow) {
	if len(rows) == 0 {
		return
	}
	width := len("aim (issue 32)")
	for _, a := range rows {
		width = max(width, utf8.RuneCountInString(a.Name))
	}
	row := "%-" + strconv.Itoa(width) + "s %4s %7s %7s  %s\n"
	fmt.Fprintf(w, row, "aim (issue 32)", "c", "value", "aim", "met")
	for _, a := range rows {
		met := yesNo(a.Met)
		if !a.Measured {
			met = "n/a"
		}
		fmt.Fprintf(w, row, a.Name, concurrencyText(a.Concurrency), show(a.Value, 2), boundText(a.Aim, a.AtLeast), met)
	}
	fmt.Fprintln(w, "(where the gateway is meant to get to, reported: the run passes or fails on the checks above)")
}
