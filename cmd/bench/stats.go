package main

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/samples"
)

// Targets (docs/performance.md, Targets), as ratios of the gateway against the bare proxy
// measured in the same run.
const (
	minThroughputRatio = 0.90 // gateway req/s ÷ proxy req/s, at least
	maxCPURatio        = 1.2  // gateway CPU µs/req ÷ proxy CPU µs/req, at most
	maxMiBPer1000      = 40.0 // gateway MiB per 1,000 open streams, at most
	maxRSSReturn       = 1.10 // RSS after the streams close ÷ idle RSS, at most

	// In database mode (-dsn) the throughput and CPU targets of the
	// gateway and of gateway-limits are these; gateway-plan's ratios are
	// reported without a target.
	dbMinThroughputRatio = 0.80
	dbMaxCPURatio        = 1.00
)

// Verdicts of a check.
const (
	verdictPass = "PASS"
	verdictFail = "FAIL"
	verdictNA   = "n/a"
	// verdictReported is a ratio given for information, with no target.
	verdictReported = "reported"
)

// latencySummary sorts durs in place and returns p50 and p99 in ms.
func latencySummary(durs []time.Duration) (p50, p99 float64) {
	slices.Sort(durs)
	return samples.Millis(samples.Percentile(durs, 50)), samples.Millis(samples.Percentile(durs, 99))
}

// check is one target (docs/performance.md) evaluated on this run's figures.
type check struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency,omitempty"`
	Gateway     figure  `json:"gateway"`
	Proxy       figure  `json:"proxy"` // the reference, when the check is a ratio
	Value       figure  `json:"value"` // the ratio, or the gateway figure itself
	Limit       float64 `json:"limit"`
	AtLeast     bool    `json:"at_least"` // Value must be ≥ Limit; otherwise ≤
	Verdict     string  `json:"verdict"`
	Note        string  `json:"note,omitempty"`
}

// judge returns PASS when value meets limit in the given direction. A value
// that is not a finite number (a missing figure) is n/a.
func judge(value, limit float64, atLeast bool) string {
	switch {
	case math.IsNaN(value) || math.IsInf(value, 0):
		return verdictNA
	case atLeast && value >= limit, !atLeast && value <= limit:
		return verdictPass
	}
	return verdictFail
}

// ratioCheck compares gateway with proxy: Value = gateway ÷ proxy. A zero or
// missing reference makes the check n/a rather than a division by zero.
func ratioCheck(name string, gateway, proxy, limit float64, atLeast bool) check {
	c := check{Name: name, Gateway: figure(gateway), Proxy: figure(proxy), Limit: limit, AtLeast: atLeast, Value: figure(math.NaN())}
	if proxy > 0 && !math.IsNaN(gateway) {
		c.Value = figure(gateway / proxy)
	}
	c.Verdict = judge(float64(c.Value), limit, atLeast)
	if c.Verdict == verdictNA {
		c.Note = "missing figure"
	}
	return c
}

// failOnErrors turns a passing check into a failure when the gateway
// answered errors: speed bought by failing requests is not a pass.
func failOnErrors(c check, errors int) check {
	if errors > 0 && c.Verdict == verdictPass {
		c.Verdict = verdictFail
		c.Note = "gateway answered errors"
	}
	return c
}

// reported turns a ratio check into one without a target: its value is
// given, never judged (a missing figure stays n/a).
func reported(c check, errors int) check {
	if c.Verdict == verdictNA {
		return c
	}
	c.Verdict, c.Limit, c.AtLeast, c.Note = verdictReported, 0, false, ""
	if errors > 0 {
		c.Note = "gateway answered errors"
	}
	return c
}

// perRequestMicros is CPU µs per request from a tick delta; NaN when no
// request completed.
func perRequestMicros(ticks int64, requests int) float64 {
	if requests <= 0 {
		return math.NaN()
	}
	return float64(ticks*microsPerTick) / float64(requests)
}

// mibPer1000 scales the RSS growth of n open streams to 1,000 streams.
func mibPer1000(idleKiB, heldKiB int64, n int) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(heldKiB-idleKiB) / 1024 * 1000 / float64(n)
}

// figure is a measured number that may be missing (NaN): JSON has no NaN, so
// a missing figure is written as null.
type figure float64

// MarshalJSON writes f, or null when it is not a finite number.
func (f figure) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, math.Round(v*1000)/1000, 'f', -1, 64), nil
}
