package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// probe is one /healthz or /readyz answer.
type probe struct {
	status int
	Ready  bool   `json:"ready"`
	Reason string `json:"reason"`
	Status string `json:"status"`
}

func get(t *testing.T, base, path string) probe {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := probe{status: resp.StatusCode}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("GET %s: not JSON: %s", path, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	return p
}

// Both probes answer without authentication; readiness turns 503 with its
// reason when a migration this binary needs is not recorded, and back.
func TestHealthAndReadiness(t *testing.T) {
	e := apptest.New(t)
	if p := get(t, e.Server.URL, "/healthz"); p.status != 200 || p.Status != "ok" {
		t.Fatalf("healthz %+v", p)
	}
	if p := get(t, e.Server.URL, "/readyz"); p.status != 200 || !p.Ready || p.Reason != "" {
		t.Fatalf("readyz %+v", p)
	}
	e.ExecSQL("DELETE FROM schema_migrations WHERE version = '0021_config_state'")
	apptest.Eventually(t, "readyz reports the missing migration", func() bool {
		p := get(t, e.Server.URL, "/readyz")
		return p.status == 503 && !p.Ready && p.Reason == "migrations pending"
	})
	if p := get(t, e.Server.URL, "/healthz"); p.status != 200 {
		t.Fatalf("healthz while not ready: %+v", p)
	}
	e.ExecSQL("INSERT INTO schema_migrations (version, applied_at) VALUES ('0021_config_state', 1)")
	apptest.Eventually(t, "ready again", func() bool { return get(t, e.Server.URL, "/readyz").status == 200 })
}

// A stop with a stream in flight: readiness turns 503 at once while the
// node still serves (SHUTDOWN_DELAY), the stream finishes normally and is
// billed exactly once, and the report counts it as drained, none cut.
func TestShutdownTurnsReadinessOffAndDrainsTheStream(t *testing.T) {
	e := apptest.New(t, "SHUTDOWN_DELAY", "1s", "SHUTDOWN_TIMEOUT", "10s")
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)
	logsBefore := len(g.ConsumeLogs())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- e.App.ServeListener(ctx, ln) }()
	if p := get(t, base, "/readyz"); p.status != 200 {
		t.Fatalf("readyz before the stop: %+v", p)
	}

	up.SetBehavior(fakeupstream.Behavior{Reply: "one two three four five six seven eight", Chunks: 8, ChunkDelay: 200 * time.Millisecond})
	body, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "talk"}}})
	streamed := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			streamed <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		streamed <- string(b)
	}()
	up.WaitOpen(t, 1, 5*time.Second)

	stop()
	// Still served during the delay, and not ready.
	p := get(t, base, "/readyz")
	if p.status != 503 || p.Ready || p.Reason != "draining" {
		t.Fatalf("readyz while draining: %+v", p)
	}
	if p := get(t, base, "/healthz"); p.status != 200 {
		t.Fatalf("healthz while draining: %+v", p)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stop did not end")
	}
	if b := <-streamed; !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("the stream did not finish: %q", b)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("the port is still open after the drain")
	}
	cfg := e.Config
	e.Stop()
	rep := e.App.LastStop()
	if rep.InFlight != 1 || rep.Drained != 1 || rep.Cut != 0 || rep.Settlements < 1 || rep.Delay != time.Second ||
		rep.Total < rep.Delay+rep.Drain || rep.Drain <= 0 {
		t.Fatalf("stop report %+v", rep)
	}

	// Billed exactly once, as the restarted gateway reads it.
	e2 := apptest.Start(t, cfg)
	g2 := *g
	g2.Env, g2.Root = e2, e2.Root()
	logs := g2.ConsumeLogs()
	if len(logs) != logsBefore+1 {
		t.Fatalf("%d consume logs, want %d", len(logs), logsBefore+1)
	}
	if spent := before - g2.Quota(g.UserID); spent != logs[0].Quota || spent <= 0 {
		t.Fatalf("balance fell by %d, the stream's log says %d", spent, logs[0].Quota)
	}
}
