package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestLatencySummarySorts(t *testing.T) {
	samples := []time.Duration{5 * time.Millisecond, time.Millisecond, 3 * time.Millisecond}
	p50, p99 := latencySummary(samples)
	if p50 != 3 || p99 != 5 {
		t.Errorf("latencySummary = %g, %g ms; want 3, 5", p50, p99)
	}
}

func TestRatioCheck(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name            string
		gateway, proxy  float64
		limit           float64
		atLeast         bool
		want            string
		wantValue       float64
		wantValueMissed bool
	}{
		{"throughput above", 4500, 4000, 0.9, true, verdictPass, 1.125, false},
		{"throughput exactly at limit", 900, 1000, 0.9, true, verdictPass, 0.9, false},
		{"throughput below", 3000, 4000, 0.9, true, verdictFail, 0.75, false},
		{"cpu below limit", 230, 200, 1.2, false, verdictPass, 1.15, false},
		{"cpu exactly at limit", 240, 200, 1.2, false, verdictPass, 1.2, false},
		{"cpu above", 300, 200, 1.2, false, verdictFail, 1.5, false},
		{"no gateway figure", nan, 200, 1.2, false, verdictNA, 0, true},
		{"no reference", 200, 0, 1.2, false, verdictNA, 0, true},
	}
	for _, tt := range tests {
		c := ratioCheck(tt.name, tt.gateway, tt.proxy, tt.limit, tt.atLeast)
		if c.Verdict != tt.want {
			t.Errorf("%s: verdict %s, want %s", tt.name, c.Verdict, tt.want)
		}
		v := float64(c.Value)
		if tt.wantValueMissed != math.IsNaN(v) || (!tt.wantValueMissed && math.Abs(v-tt.wantValue) > 1e-9) {
			t.Errorf("%s: value %g, want %g", tt.name, v, tt.wantValue)
		}
	}
}

func TestFailOnErrors(t *testing.T) {
	pass := ratioCheck("throughput", 5000, 4000, 0.9, true)
	if got := failOnErrors(pass, 0).Verdict; got != verdictPass {
		t.Errorf("no errors: %s, want PASS", got)
	}
	if got := failOnErrors(pass, 3); got.Verdict != verdictFail || got.Note == "" {
		t.Errorf("errors: %s %q, want FAIL with a note", got.Verdict, got.Note)
	}
	na := ratioCheck("throughput", math.NaN(), 4000, 0.9, true)
	if got := failOnErrors(na, 3).Verdict; got != verdictNA {
		t.Errorf("missing figure with errors: %s, want n/a", got)
	}
}

func TestPerRequestAndMemoryFigures(t *testing.T) {
	// 50 ticks of 10 ms over 2,500 requests: 200 µs each.
	if got := perRequestMicros(50, 2500); got != 200 {
		t.Errorf("perRequestMicros = %g, want 200", got)
	}
	if got := perRequestMicros(50, 0); !math.IsNaN(got) {
		t.Errorf("perRequestMicros with no requests = %g, want NaN", got)
	}
	// 20 MiB more with 500 streams is 40 MiB per 1,000.
	if got := mibPer1000(10*1024, 30*1024, 500); got != 40 {
		t.Errorf("mibPer1000 = %g, want 40", got)
	}
}

func TestFigureJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B, C figure }{1.23456, figure(math.NaN()), figure(math.Inf(1))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"A":1.235,"B":null,"C":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestEvaluateWithoutGateway(t *testing.T) {
	o := options{Concurrency: []int{1, 16}, StreamConcurrency: 16}
	status := gatewayNoRelay + " (HTTP 404)"
	notMeasured := []chatTarget{{targetPlan, "not measured (gateway: " + gatewayNoRelay + ")", "plan-billed "}}
	rows := summarise(nil, o, status, notMeasured)
	for _, r := range rows {
		if r.Target == targetGateway && r.Skipped != gatewayNoRelay {
			t.Errorf("gateway row skipped %q, want %q", r.Skipped, gatewayNoRelay)
		}
	}
	for _, c := range evaluate(rows, nil, o, status, notMeasured) {
		if c.Verdict != verdictNA {
			t.Errorf("%s c=%d: %s, want n/a while the relay is missing", c.Name, c.Concurrency, c.Verdict)
		}
	}
}

// Until the relay bills plans, the plan user's calls fail: the plan
// target's rows and checks say so, and the gateway's checks stand.
func TestEvaluatePlanFailing(t *testing.T) {
	o := options{Concurrency: []int{1, 16}, StreamConcurrency: 16}
	var rounds []roundResult
	for _, c := range o.Concurrency {
		for _, name := range []string{"proxy", targetGateway} {
			rounds = append(rounds, roundResult{Target: name, Scenario: "chat", Concurrency: c, Round: 1,
				Requests: 1000, Seconds: 1, CPUTicks: 10})
		}
	}
	planStatus := gatewayRelayFailing + " (HTTP 429: insufficient quota)"
	extra := []chatTarget{{targetPlan, planStatus, "plan-billed "}}
	rows := summarise(rounds, o, gatewayMeasured, extra)
	planRows := 0
	for _, r := range rows {
		if r.Target != targetPlan {
			continue
		}
		planRows++
		if r.Scenario != "chat" || r.Skipped != gatewayRelayFailing {
			t.Errorf("plan row %s c=%d skipped %q, want a chat row skipped %q", r.Scenario, r.Concurrency, r.Skipped, gatewayRelayFailing)
		}
	}
	if planRows != len(o.Concurrency) {
		t.Errorf("%d plan rows, want one per chat concurrency (%d)", planRows, len(o.Concurrency))
	}
	plan := 0
	for _, c := range evaluate(rows, nil, o, gatewayMeasured, extra) {
		switch {
		case strings.HasPrefix(c.Name, "plan-billed "):
			plan++
			if c.Verdict != verdictNA || c.Note != targetPlan+": "+gatewayRelayFailing {
				t.Errorf("%s c=%d: %s (%s), want n/a for the failing plan target", c.Name, c.Concurrency, c.Verdict, c.Note)
			}
		case c.Concurrency > 0 && c.Verdict != verdictPass:
			t.Errorf("%s c=%d: %s, want PASS (gateway equal to proxy)", c.Name, c.Concurrency, c.Verdict)
		}
	}
	if plan != 2*len(o.Concurrency) {
		t.Errorf("%d plan-billed checks, want %d", plan, 2*len(o.Concurrency))
	}
}

func TestParseConcurrency(t *testing.T) {
	got, err := parseConcurrency("1, 16,64")
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 16 || got[2] != 64 {
		t.Errorf("parseConcurrency = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "x", "5000"} {
		if _, err := parseConcurrency(bad); err == nil {
			t.Errorf("parseConcurrency(%q): want an error", bad)
		}
	}
}

func TestRotate(t *testing.T) {
	got := rotate([]string{"mock", "proxy", "gateway"}, 4)
	if got[0] != "proxy" || got[1] != "gateway" || got[2] != "mock" {
		t.Errorf("rotate = %v", got)
	}
}

// In database mode the gateway and gateway-limits are held to 0.80× the
// proxy's throughput at ≤ 1.00× its CPU, gateway-plan's ratios are reported
// without a target, and the database figures are pooled per row.
func TestEvaluateDatabaseMode(t *testing.T) {
	ticks := func(n int64) *int64 { return &n }
	rounds := []roundResult{
		{Target: "proxy", Scenario: "chat", Concurrency: 16, Round: 1, Requests: 1000, Seconds: 1, CPUTicks: 20},
		// 0.85× the throughput at 1.06× the CPU: a throughput failure on
		// SQLite (≥ 0.90), a CPU failure in database mode (≤ 1.00).
		{Target: targetGateway, Scenario: "chat", Concurrency: 16, Round: 1, Requests: 850, Seconds: 1, CPUTicks: 18,
			DBCPUTicks: ticks(17), DBRoundTrips: ticks(1700)},
		{Target: targetPlan, Scenario: "chat", Concurrency: 16, Round: 1, Requests: 100, Seconds: 1, CPUTicks: 5,
			DBCPUTicks: ticks(5), DBRoundTrips: ticks(500)},
		{Target: targetLimits, Scenario: "chat", Concurrency: 16, Round: 1, Requests: 900, Seconds: 1, CPUTicks: 18,
			DBCPUTicks: ticks(9), DBRoundTrips: ticks(2700)},
	}
	extra := []chatTarget{{targetPlan, gatewayMeasured, "plan-billed "}, {targetLimits, gatewayMeasured, "rate-limited "}}
	verdicts := func(o options) map[string]string {
		rows := summarise(rounds, o, gatewayMeasured, extra)
		got := map[string]string{}
		for _, c := range evaluate(rows, nil, o, gatewayMeasured, extra) {
			if c.Concurrency == 16 {
				got[c.Name] = c.Verdict
			}
		}
		return got
	}
	sqlite := options{Concurrency: []int{16}, StreamConcurrency: 16}
	db := sqlite
	db.Database = "postgres"
	for name, want := range map[string]string{
		"throughput vs proxy":                   verdictFail,
		"CPU per request vs proxy":              verdictPass,
		"plan-billed throughput vs proxy":       verdictFail,
		"rate-limited CPU per request vs proxy": verdictPass,
	} {
		if got := verdicts(sqlite)[name]; got != want {
			t.Errorf("SQLite %s: %s, want %s", name, got, want)
		}
	}
	if _, ok := verdicts(sqlite)["gateway+DB CPU per request vs proxy"]; ok {
		t.Error("SQLite mode has a gateway+DB check")
	}
	for name, want := range map[string]string{
		"throughput vs proxy":                              verdictPass,
		"CPU per request vs proxy":                         verdictFail,
		"gateway+DB CPU per request vs proxy":              verdictReported,
		"plan-billed throughput vs proxy":                  verdictReported,
		"plan-billed CPU per request vs proxy":             verdictReported,
		"plan-billed gateway+DB CPU per request vs proxy":  verdictReported,
		"rate-limited throughput vs proxy":                 verdictPass,
		"rate-limited CPU per request vs proxy":            verdictPass,
		"rate-limited gateway+DB CPU per request vs proxy": verdictReported,
	} {
		if got := verdicts(db)[name]; got != want {
			t.Errorf("database mode %s: %s, want %s", name, got, want)
		}
	}
	for _, r := range summarise(rounds, db, gatewayMeasured, extra) {
		if r.Target != targetGateway || r.Scenario != "chat" {
			continue
		}
		sum := float64(r.CPUMicrosPerReq + r.DBCPUMicrosPerReq)
		if r.DBCPUMicrosPerReq != 200 || math.Abs(float64(r.GatewayDBCPUMicrosPerReq)-sum) > 1e-9 || r.DBRoundTripsPerReq != 2 {
			t.Errorf("gateway row: DB CPU %v, gateway+DB %v, round trips %v; want 200, %v, 2",
				r.DBCPUMicrosPerReq, r.GatewayDBCPUMicrosPerReq, r.DBRoundTripsPerReq, sum)
		}
	}
}

func TestAddedLatency(t *testing.T) {
	rows := []summaryRow{
		{Target: "mock", Scenario: "chat", Concurrency: 1, P50ms: 0.100, P99ms: 0.300},
		{Target: "proxy", Scenario: "chat", Concurrency: 1, P50ms: 0.250, P99ms: 0.500},
		{Target: targetGateway, Scenario: "chat", Concurrency: 1, P50ms: 0.180, P99ms: 0.390},
		{Target: targetPlan, Scenario: "chat", Concurrency: 1, Skipped: "not measured", P50ms: nan(), P99ms: nan()},
		{Target: "mock", Scenario: "chat", Concurrency: 16, P50ms: 1, P99ms: 2},
		{Target: targetGateway, Scenario: "chat", Concurrency: 16, P50ms: 2, P99ms: 3},
		{Target: "mock", Scenario: "stream", Concurrency: 16, P50ms: 1.000, P99ms: 2},
		{Target: targetGateway, Scenario: "stream", Concurrency: 16, P50ms: 1.040, P99ms: 2.5},
	}
	got := addedLatency(rows, options{Concurrency: []int{1, 16}, StreamConcurrency: 16})
	type want struct {
		target, scenario string
		p50, p99         float64
		met              bool
	}
	wants := []want{
		{"proxy", "chat", 150, 200, false},
		{targetGateway, "chat", 80, 90, true},
		{targetGateway, "stream", 40, 500, true},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.Target != w.target || g.Scenario != w.scenario || math.Abs(float64(g.P50Micros)-w.p50) > 1e-6 ||
			math.Abs(float64(g.P99Micros)-w.p99) > 1e-6 || g.Met != w.met {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if rows := addedLatency(rows, options{Concurrency: []int{16}, StreamConcurrency: 4}); len(rows) != 0 {
		t.Errorf("without c = 1 and a mock stream row: %+v", rows)
	}
}
