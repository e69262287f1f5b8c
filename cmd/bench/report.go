package main

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// report is everything a run measured; it is written as JSON as is.
type report struct {
	Machine machine     `json:"machine"`
	Flags   options     `json:"flags"`
	Started string      `json:"started"`
	Seconds figure      `json:"seconds"`
	NoFile  noFileLimit `json:"rlimit_nofile"`
	Gateway gatewayInfo `json:"gateway"`
	// GatewayPlan is the plan-billed target: the same gateway, called with
	// the key of a user whose calls only a plan pays.
	GatewayPlan planInfo `json:"gateway_plan"`
	// GatewayLimits is the rate-limited target: the same gateway, called
	// with a key whose RPM, TPM and concurrency limits are set high enough
	// never to refuse (every call goes through the limiter).
	GatewayLimits planInfo `json:"gateway_limits"`
	// Database is the gateway's database: SQLite, or in database mode
	// (-dsn) the fresh database of the run and the server's processes.
	Database databaseInfo     `json:"database"`
	IdleKiB  map[string]int64 `json:"idle_rss_kib"` // by target, after the warm-up
	Summary  []summaryRow     `json:"summary"`
	Memory   []memResult      `json:"memory"`
	Checks   []check          `json:"checks"`
	// Added is the latency each target adds to the mock's (chat at c = 1,
	// the stream's time to first byte).
	Added []addedRow `json:"added_latency"`
	// Aims are issue 32's targets against the checks' figures (aims.go).
	Aims    []aimRow      `json:"aims"`
	Rounds  []roundResult `json:"rounds"` // every interval; round 0 is the warm-up
	Error   string        `json:"error,omitempty"`
	started time.Time
}

// machine is where the run happened.
type machine struct {
	NumCPU    int    `json:"nproc"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kernel    string `json:"kernel,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
	Date      string `json:"date"`
}

func newReport(o options) *report {
	now := time.Now()
	return &report{
		Machine: machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
			Kernel: readTrimmed("/proc/sys/kernel/osrelease"), CPUModel: cpuModel(), Date: now.UTC().Format(time.RFC3339)},
		Flags:    o,
		Started:  now.UTC().Format(time.RFC3339),
		started:  now,
		IdleKiB:  map[string]int64{},
		Database: databaseInfo{Engine: "sqlite"},
	}
}

// summaryRow is one target under one scenario over all rounds.
type summaryRow struct {
	Target          string `json:"target"`
	Scenario        string `json:"scenario"`
	Concurrency     int    `json:"concurrency"`
	Rounds          int    `json:"rounds"`
	Requests        int    `json:"requests"`
	Errors          int    `json:"errors"`
	ReqPerSec       figure `json:"req_per_sec"`
	P50ms           figure `json:"p50_ms"` // chat: latency; stream: time to first byte
	P99ms           figure `json:"p99_ms"`
	CPUMicrosPerReq figure `json:"cpu_us_per_req"`
	// UpstreamCPUMicrosPerReq is the mock's CPU per request of this target:
	// what the target itself costs is CPUMicrosPerReq alone.
	UpstreamCPUMicrosPerReq figure `json:"upstream_cpu_us_per_req"`
	// DBCPUMicrosPerReq is the database server's CPU per request
	// (database mode, gateway targets), GatewayDBCPUMicrosPerReq the sum
	// of it and CPUMicrosPerReq, DBRoundTripsPerReq the statements the
	// gateway sent per request (every mode). Null when not measured.
	DBCPUMicrosPerReq        figure `json:"db_cpu_us_per_req"`
	GatewayDBCPUMicrosPerReq figure `json:"gateway_db_cpu_us_per_req"`
	DBRoundTripsPerReq       figure `json:"db_round_trips_per_req"`
	Skipped                  string `json:"skipped,omitempty"`
	FirstError               string `json:"first_error,omitempty"`
}

// finish summarises the rounds and evaluates the checks.
func (r *report) finish(runErr error) {
	r.Seconds = figure(time.Since(r.started).Seconds())
	if runErr != nil {
		r.Error = runErr.Error()
	}
	r.Summary = summarise(r.Rounds, r.Flags, r.Gateway.Status, r.chatTargets())
	r.Checks = evaluate(r.Summary, r.Memory, r.Flags, r.Gateway.Status, r.chatTargets())
	r.Added = addedLatency(r.Summary, r.Flags)
	r.Aims = issueAims(r.Checks, r.Flags.Database != "")
}

// chatTarget is a gateway target measured under the chat loads only
// (gateway-plan, gateway-limits): its status and the prefix of its checks.
type chatTarget struct {
	name, status, prefix string
}

func (r *report) chatTargets() []chatTarget {
	return []chatTarget{
		{targetPlan, r.GatewayPlan.Status, "plan-billed "},
		{targetLimits, r.GatewayLimits.Status, "rate-limited "},
	}
}

// summarise pools the measured rounds (not the warm-up) per target and
// scenario: req/s is all requests over all seconds, percentiles are over
// all samples, CPU is all ticks over all requests. The chat-only targets
// (extra) have chat rows only.
func summarise(rounds []roundResult, o options, gatewayStatus string, extra []chatTarget) []summaryRow {
	type key struct {
		target, scenario string
		c                int
	}
	type pool struct {
		row            summaryRow
		seconds        float64
		ticks, upTicks int64
		samples        []time.Duration
		// Intervals that carried the database figures, and their sums.
		dbRounds, rtRounds int
		dbTicks, rt        int64
	}
	pools := map[key]*pool{}
	for _, rr := range rounds {
		if rr.Round == 0 {
			continue
		}
		k := key{rr.Target, rr.Scenario, rr.Concurrency}
		p := pools[k]
		if p == nil {
			p = &pool{row: summaryRow{Target: rr.Target, Scenario: rr.Scenario, Concurrency: rr.Concurrency}}
			pools[k] = p
		}
		p.row.Rounds++
		p.row.Requests += rr.Requests
		p.row.Errors += rr.Errors
		if p.row.FirstError == "" {
			p.row.FirstError = rr.FirstError
		}
		p.seconds += float64(rr.Seconds)
		p.ticks += rr.CPUTicks
		p.upTicks += rr.UpstreamCPUTicks
		p.samples = append(p.samples, rr.samples...)
		if rr.DBCPUTicks != nil {
			p.dbRounds++
			p.dbTicks += *rr.DBCPUTicks
		}
		if rr.DBRoundTrips != nil {
			p.rtRounds++
			p.rt += *rr.DBRoundTrips
		}
	}
	var rows []summaryRow
	scenarios := []scenario{}
	for _, c := range o.Concurrency {
		scenarios = append(scenarios, scenario{"chat", false, c})
	}
	scenarios = append(scenarios, scenario{"stream", true, o.StreamConcurrency})
	for _, sc := range scenarios {
		names := []string{"mock", "proxy", targetGateway}
		status := map[string]string{}
		for _, x := range extra {
			names = append(names, x.name)
			status[x.name] = x.status
		}
		for _, name := range names {
			chatOnly, isExtra := status[name]
			if isExtra && sc.stream {
				continue
			}
			p := pools[key{name, sc.name, sc.concurrency}]
			if p == nil {
				row := summaryRow{Target: name, Scenario: sc.name, Concurrency: sc.concurrency, Skipped: "not measured",
					ReqPerSec: nan(), P50ms: nan(), P99ms: nan(), CPUMicrosPerReq: nan(), UpstreamCPUMicrosPerReq: nan(),
					DBCPUMicrosPerReq: nan(), GatewayDBCPUMicrosPerReq: nan(), DBRoundTripsPerReq: nan()}
				if name == targetGateway && gatewayStatus != gatewayMeasured {
					row.Skipped = shortStatus(gatewayStatus)
				}
				if isExtra && chatOnly != gatewayMeasured {
					row.Skipped = shortStatus(chatOnly)
				}
				rows = append(rows, row)
				continue
			}
			row := p.row
			row.ReqPerSec = figure(float64(row.Requests) / p.seconds)
			p50, p99 := latencySummary(p.samples)
			row.P50ms, row.P99ms = figure(p50), figure(p99)
			row.CPUMicrosPerReq = figure(perRequestMicros(p.ticks, row.Requests))
			row.UpstreamCPUMicrosPerReq = figure(perRequestMicros(p.upTicks, row.Requests))
			if name == "mock" {
				row.UpstreamCPUMicrosPerReq = nan() // the mock is its own upstream
			}
			// A database figure is given only when every interval of the
			// row carried it.
			row.DBCPUMicrosPerReq, row.GatewayDBCPUMicrosPerReq, row.DBRoundTripsPerReq = nan(), nan(), nan()
			if p.dbRounds == row.Rounds {
				row.DBCPUMicrosPerReq = figure(perRequestMicros(p.dbTicks, row.Requests))
				row.GatewayDBCPUMicrosPerReq = figure(perRequestMicros(p.ticks+p.dbTicks, row.Requests))
			}
			if p.rtRounds == row.Rounds && row.Requests > 0 {
				row.DBRoundTripsPerReq = figure(float64(p.rt) / float64(row.Requests))
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// evaluate holds the gateway's figures against the targets
// (docs/performance.md), then the chat-only targets' (gateway-plan,
// gateway-limits) chat figures against the same throughput and CPU targets.
func evaluate(rows []summaryRow, mem []memResult, o options, gatewayStatus string, extra []chatTarget) []check {
	find := func(target, scenario string, c int) summaryRow {
		for _, r := range rows {
			if r.Target == target && r.Scenario == scenario && r.Concurrency == c {
				return r
			}
		}
		return summaryRow{ReqPerSec: nan(), CPUMicrosPerReq: nan()}
	}
	var checks []check
	dbMode := o.Database != ""
	minTP, maxCPU := minThroughputRatio, maxCPURatio
	if dbMode {
		minTP, maxCPU = dbMinThroughputRatio, dbMaxCPURatio
	}
	// ratioChecks are the throughput and CPU checks of target against the
	// proxy at every concurrency, named with prefix; in database mode also
	// the gateway+DB CPU against the proxy's, reported without a target.
	// reportedOnly reports every ratio without a target (gateway-plan in
	// database mode).
	ratioChecks := func(target, prefix string, reportedOnly bool) {
		for _, c := range o.Concurrency {
			g, p := find(target, "chat", c), find("proxy", "chat", c)
			t := failOnErrors(ratioCheck(prefix+"throughput vs proxy", float64(g.ReqPerSec), float64(p.ReqPerSec), minTP, true), g.Errors)
			u := failOnErrors(ratioCheck(prefix+"CPU per request vs proxy", float64(g.CPUMicrosPerReq), float64(p.CPUMicrosPerReq), maxCPU, false), g.Errors)
			cs := []check{t, u}
			if reportedOnly {
				cs[0], cs[1] = reported(t, g.Errors), reported(u, g.Errors)
			}
			if dbMode {
				cs = append(cs, reported(ratioCheck(prefix+"gateway+DB CPU per request vs proxy", float64(g.GatewayDBCPUMicrosPerReq),
					float64(p.CPUMicrosPerReq), 0, false), g.Errors))
			}
			for i := range cs {
				cs[i].Concurrency = c
			}
			checks = append(checks, cs...)
		}
	}
	ratioChecks(targetGateway, "", false)
	gm, pm := memResult{MiBPer1000: nan(), AfterOverIdle: nan()}, memResult{MiBPer1000: nan()}
	for _, m := range mem {
		switch m.Target {
		case targetGateway:
			gm = m
		case "proxy":
			pm = m
		}
	}
	streams := check{Name: "MiB per 1,000 open streams", Gateway: gm.MiBPer1000, Proxy: pm.MiBPer1000, Value: gm.MiBPer1000, Limit: maxMiBPer1000}
	streams.Verdict = judge(float64(streams.Value), streams.Limit, false)
	back := check{Name: "RSS after close ÷ idle", Gateway: gm.AfterOverIdle, Proxy: pm.AfterOverIdle, Value: gm.AfterOverIdle, Limit: maxRSSReturn}
	back.Verdict = judge(float64(back.Value), back.Limit, false)
	if gm.Error != "" {
		for _, c := range []*check{&streams, &back} {
			c.Verdict, c.Note = verdictFail, gm.Error
		}
	}
	checks = append(checks, streams, back)
	for _, x := range extra {
		from := len(checks)
		ratioChecks(x.name, x.prefix, dbMode && x.name == targetPlan)
		if x.status != gatewayMeasured {
			for i := from; i < len(checks); i++ {
				checks[i].Verdict, checks[i].Note = verdictNA, x.name+": "+shortStatus(x.status)
			}
		}
	}
	if gatewayStatus != gatewayMeasured {
		for i := range checks {
			checks[i].Verdict, checks[i].Note = verdictNA, "gateway: "+shortStatus(gatewayStatus)
		}
	}
	return checks
}

// shortStatus is the gateway status without its detail in parentheses.
func shortStatus(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	if i := strings.Index(s, ": "); i > 0 {
		return s[:i]
	}
	return s
}

func nan() figure { return figure(math.NaN()) }

// write saves the report as indented JSON.
func (r *report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	for line := range strings.Lines(readTrimmed("/proc/cpuinfo")) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
