package metrics_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// The metrics, Server-Timing and access log of docs/operations.md through
// the real HTTP surface.

var serverTiming = regexp.MustCompile(`^gw;dur=([0-9.]+), upstream;dur=([0-9.]+)$`)

// timing checks a /v1 answer's Server-Timing header and returns its
// gateway and upstream figures in milliseconds.
func timing(t *testing.T, what string, r *apptest.V1) (gw, up float64) {
	t.Helper()
	m := serverTiming.FindStringSubmatch(r.Header.Get("Server-Timing"))
	if m == nil {
		t.Fatalf("%s: Server-Timing %q (status %d)", what, r.Header.Get("Server-Timing"), r.Status)
	}
	gw, _ = strconv.ParseFloat(m[1], 64)
	up, _ = strconv.ParseFloat(m[2], 64)
	return gw, up
}

func chat(model string, stream bool) map[string]any {
	return map[string]any{"model": model, "stream": stream, "messages": []map[string]string{{"role": "user", "content": "secret prompt text"}}}
}

func value(t *testing.T, m apptest.Metrics, name string, labels ...string) float64 {
	t.Helper()
	v, ok := m.Value(name, labels...)
	if !ok {
		t.Fatalf("no sample of %s%v", name, labels)
	}
	return v
}

func TestMetricsMoveWithRelayCalls(t *testing.T) {
	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	// A fixed clock: the rate-limit window below cannot roll over.
	now := time.Unix(1_800_000_000-1_800_000_000%60+1, 0)
	e.App.SetClock(func() time.Time { return now })

	before := e.Scrape()
	if _, ok := before.Value("modelgate_relay_requests_total"); ok {
		t.Fatal("relay requests counted before any call")
	}
	for _, family := range []string{"go_goroutines", "process_cpu_seconds_total", "modelgate_relay_inflight",
		"modelgate_ledger_queue_depth", "modelgate_logwriter_queue_depth", "modelgate_channel_status",
		"modelgate_ratelimit_refused_total", "modelgate_ratelimit_redis_errors_total", "modelgate_db_round_trips_total"} {
		if before[family] == nil {
			t.Errorf("family %s missing", family)
		}
	}

	// A JSON call that the upstream answers after 30 ms, and a stream.
	up.Script(fakeupstream.Behavior{Delay: 30 * time.Millisecond})
	r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false))
	if r.Status != http.StatusOK {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	if gw, upMS := timing(t, "json", r); upMS < 30 || gw < 0 || gw > 1000 {
		t.Errorf("json Server-Timing gw=%v upstream=%v, want upstream ≥ 30 ms", gw, upMS)
	}
	r = e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", true))
	if r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte("[DONE]")) {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	timing(t, "stream", r)

	// An upstream failure: the client gets a 502, the channel an error.
	up.Script(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	r = e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false))
	if r.Status != http.StatusBadGateway {
		t.Fatalf("failing upstream: %d %s", r.Status, r.Body)
	}
	timing(t, "upstream error", r)

	// A model nobody priced: refused, and counted under "other", never its name.
	r = e.Call(g.Key, "POST", "/v1/chat/completions", chat("client-invented-model", false))
	if r.Status != http.StatusNotFound {
		t.Fatalf("unknown model: %d %s", r.Status, r.Body)
	}
	timing(t, "refusal", r)
	// Answers that are not calls carry the header too.
	timing(t, "models", e.Call(g.Key, "GET", "/v1/models", nil))
	timing(t, "bad key", e.Call("sk-wrong", "POST", "/v1/chat/completions", chat("gpt-test", false)))

	// A rate-limited key: the second call of a 1-per-minute key is refused.
	g.User.OK("PUT", "/api/token/", map[string]any{"id": g.TokenID(), "rpm_limit": 1})
	e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false))
	r = e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false))
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("rate limited: %d %s", r.Status, r.Body)
	}
	timing(t, "rate limited", r)
	if err := e.App.FlushBilling(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	m := e.Scrape()
	ok200 := []string{"endpoint", "chat", "model", "gpt-test", "channel", "upstream", "status", "200", "billing", "balance"}
	if got := value(t, m, "modelgate_relay_requests_total", ok200...); got != 3 {
		t.Errorf("200 calls counted %v, want 3 (json, stream, the first rate-limited key's)", got)
	}
	if got := value(t, m, "modelgate_relay_requests_total", "model", "gpt-test", "status", "502", "channel", "upstream"); got != 1 {
		t.Errorf("502 calls counted %v, want 1", got)
	}
	if got := value(t, m, "modelgate_relay_requests_total", "model", "gpt-test", "status", "429", "billing", "none"); got != 1 {
		t.Errorf("429 calls counted %v, want 1", got)
	}
	if got := value(t, m, "modelgate_relay_requests_total", "model", "other", "status", "404"); got != 1 {
		t.Errorf("unknown-model calls counted %v, want 1", got)
	}
	for _, f := range m {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if strings.Contains(l.GetValue(), "client-invented") {
					t.Errorf("%s has a client's model name as a label: %v", f.GetName(), s.GetLabel())
				}
			}
		}
	}
	if got := value(t, m, "modelgate_relay_tokens_total", "model", "gpt-test", "kind", "prompt"); got != 36 {
		t.Errorf("prompt tokens %v, want 3 × 12", got)
	}
	if got := value(t, m, "modelgate_relay_tokens_total", "model", "gpt-test", "kind", "completion"); got != 24 {
		t.Errorf("completion tokens %v, want 3 × 8", got)
	}
	if got := value(t, m, "modelgate_relay_quota_total", "model", "gpt-test"); got <= 0 {
		t.Errorf("quota %v, want > 0", got)
	}
	if got := value(t, m, "modelgate_upstream_errors_total", "channel", "upstream", "kind", "server_error"); got != 1 {
		t.Errorf("upstream errors %v, want 1", got)
	}
	for _, h := range []string{"modelgate_relay_upstream_seconds", "modelgate_relay_gateway_seconds", "modelgate_relay_request_seconds"} {
		if got := value(t, m, h, "model", "gpt-test"); got != 5 {
			t.Errorf("%s observed %v calls, want 5", h, got)
		}
	}
	if got := value(t, m, "modelgate_ratelimit_refused_total"); got != 1 {
		t.Errorf("rate-limit refusals %v, want 1", got)
	}
	if got := value(t, m, "modelgate_ledger_commit_seconds"); got < 1 {
		t.Errorf("ledger commits %v, want some", got)
	}
	if got := value(t, m, "modelgate_logwriter_commit_seconds", "writer", "error_logs"); got < 1 {
		t.Errorf("error log commits %v, want some", got)
	}
	if got := value(t, m, "modelgate_channel_status", "channel", "upstream"); got != 1 {
		t.Errorf("channel status %v, want 1 (enabled)", got)
	}
	if got := value(t, m, "modelgate_breaker_state", "channel", "upstream", "model", "gpt-test"); got != 0 {
		t.Errorf("breaker state %v, want 0 (closed)", got)
	}
	if got := value(t, m, "modelgate_relay_inflight"); got != 0 {
		t.Errorf("inflight %v after the calls", got)
	}
}

func TestMetricsRefusedWithoutToken(t *testing.T) {
	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken)
	for name, header := range map[string]string{"none": "", "wrong": "Bearer not-the-metrics-token-000", "bare token": apptest.MetricsToken,
		"root token": "Bearer " + apptest.RootAccessToken, "prefix": "Bearer " + apptest.MetricsToken[:10]} {
		req, _ := http.NewRequest("GET", e.Server.URL+"/metrics", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
	}
	e.Scrape() // the right one passes

	off := apptest.New(t)
	resp, err := http.Get(off.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("without METRICS_TOKEN: status %d, want 404", resp.StatusCode)
	}
}

func TestMetricsListen(t *testing.T) {
	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken, "METRICS_LISTEN", "127.0.0.1:0")
	base := "http://" + e.App.MetricsAddr()
	if m := apptest.Scrape(t, base); m["go_goroutines"] == nil {
		t.Error("no go_goroutines on METRICS_LISTEN")
	}
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/v1 on the metrics address: status %d, want 404", resp.StatusCode)
	}
}

// syncBuffer is a log destination read while the gateway writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestJSONAccessLog(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e := apptest.StartWithLog(t, apptest.Config(t), log)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false), "X-Request-Id", "req-access-1")
	if r.Status != http.StatusOK {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	up.Script(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", true), "X-Request-Id", "req-access-2")

	var lines []map[string]any
	for line := range strings.Lines(out.String()) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if v["msg"] == "relay" {
			lines = append(lines, v)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d access lines, want 2: %s", len(lines), out.String())
	}
	want := map[string]any{"level": "INFO", "request_id": "req-access-1", "endpoint": "chat", "username": "caller",
		"key_name": "relay", "model": "gpt-test", "channel": "upstream", "status": float64(200), "billing": "balance",
		"stream": false, "prompt_tokens": float64(12), "completion_tokens": float64(8)}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("access line %s = %v, want %v", k, lines[0][k], v)
		}
	}
	for _, k := range []string{"user_id", "quota", "upstream_ms", "gateway_ms", "total_ms"} {
		if _, ok := lines[0][k].(float64); !ok {
			t.Errorf("access line %s = %v, want a number", k, lines[0][k])
		}
	}
	if lines[1]["request_id"] != "req-access-2" || lines[1]["status"] != float64(502) || lines[1]["stream"] != true {
		t.Errorf("failed call's access line %v", lines[1])
	}
	// No key, no prompt in any line (the upstream's key included).
	all := out.String()
	for _, secret := range []string{g.Key, strings.TrimPrefix(g.Key, "sk-"), "upstream-key", "secret prompt text", apptest.RootAccessToken} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// TestMetricsDocumented holds docs/operations.md and the example dashboard
// to the series the gateway exports: every modelgate series a scrape
// shows is in the table, and every one the dashboard queries is too.
func TestMetricsDocumented(t *testing.T) {
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(dash) {
		t.Fatal("docs/grafana-dashboard.json is not JSON")
	}
	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false))
	if err := e.App.FlushBilling(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	m := e.Scrape()
	n := 0
	for name := range m {
		if strings.HasPrefix(name, "modelgate_") {
			n++
			if !bytes.Contains(ops, []byte("`"+name+"`")) {
				t.Errorf("%s is not in docs/operations.md's table", name)
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d modelgate series in a scrape", n)
	}
	for _, name := range regexp.MustCompile(`(?:modelgate|go|process)_[a-z_]+`).FindAll(dash, -1) {
		base := strings.TrimSuffix(string(name), "_bucket")
		if strings.HasPrefix(base, "modelgate_") && !bytes.Contains(ops, []byte("`"+base+"`")) {
			t.Errorf("the dashboard queries %s, which docs/operations.md does not list", base)
		}
		if !strings.HasPrefix(base, "modelgate_") && m[base] == nil {
			t.Errorf("the dashboard queries %s, which a scrape does not show", base)
		}
	}
}

// TestClusterPeerMetrics: a peer that stops answering shows its backlog
// and failed pings, and its backlog drains when it is back.
func TestClusterPeerMetrics(t *testing.T) {
	nodes := apptest.NewCluster(t, 2, "METRICS_TOKEN", apptest.MetricsToken)
	a, b := nodes[0], nodes[1]
	root := a.Root()
	var peers []struct {
		ID     int64 `json:"id"`
		NodeID int   `json:"node_id"`
	}
	root.OK("GET", "/api/cluster_node/", nil).Decode(t, &peers)
	var peerID int64
	for _, p := range peers {
		if p.NodeID == 2 {
			peerID = p.ID
		}
	}
	if peerID == 0 {
		t.Fatalf("node 2 not in node 1's table: %+v", peers)
	}
	pending := func() float64 {
		v, _ := a.Scrape().Value("modelgate_cluster_peer_pending_events", "peer", "node-2")
		return v
	}
	apptest.Eventually(t, "node 2 caught up", func() bool { return pending() == 0 })

	b.Pause()
	a.NewUser("while-away", 1)
	if got := pending(); got < 1 {
		t.Errorf("pending events for the paused peer: %v, want ≥ 1", got)
	}
	root.Do("GET", apptest.Path("/api/cluster_node/ping/%d", peerID), nil)
	m := a.Scrape()
	if got := value(t, m, "modelgate_cluster_peer_ping_failures", "peer", "node-2"); got < 1 {
		t.Errorf("ping failures %v, want ≥ 1", got)
	}
	value(t, m, "modelgate_cluster_peer_heartbeat_age_seconds", "peer", "node-2")
	b.Resume()
	apptest.Eventually(t, "node 2's backlog drained", func() bool { return pending() == 0 })
}

// TestMetricsParallelCalls: calls that create their label set at the same
// moment are all counted, once each.
func TestMetricsParallelCalls(t *testing.T) {
	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	const n = 32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false)); r.Status != http.StatusOK {
				t.Errorf("chat: %d %s", r.Status, r.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	m := e.Scrape()
	if got := value(t, m, "modelgate_relay_requests_total", "model", "gpt-test", "status", "200"); got != n {
		t.Errorf("counted %v calls, want %d", got, n)
	}
	if got := value(t, m, "modelgate_relay_tokens_total", "model", "gpt-test", "kind", "completion"); got != 8*n {
		t.Errorf("completion tokens %v, want %d", got, 8*n)
	}
	if got := value(t, m, "modelgate_relay_gateway_seconds", "model", "gpt-test"); got != n {
		t.Errorf("gateway histogram observed %v calls, want %d", got, n)
	}
}
