package relay_test

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

// A stop with streams longer than SHUTDOWN_TIMEOUT in flight: the short
// call finishes normally, the long ones are ended at the timeout, and every
// one is settled before the ledger closes: a consume log each, the balance
// down by exactly their sum, no hold left open.
func TestShutdownSettlesEveryStreamBeforeTheLedgerCloses(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t, "SHUTDOWN_TIMEOUT", "2s")
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- e.App.ServeListener(ctx, ln) }()

	bodies := make(chan string, 4)
	stream := func() {
		body, _ := json.Marshal(chatBody("gpt-test", "talk", true))
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			bodies <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		bodies <- string(b)
	}
	// One call that ends within the timeout, three that would take 10 s.
	up.Script(fakeupstream.Behavior{Reply: abandonReply, Chunks: 4, ChunkDelay: 200 * time.Millisecond})
	go stream()
	up.WaitOpen(t, 1, 5*time.Second)
	up.SetBehavior(fakeupstream.Behavior{Reply: strings.Repeat("word ", 40), Chunks: 40,
		ChunkDelay: 250 * time.Millisecond, CompletionTokens: 5000})
	for range 3 {
		go stream()
	}
	up.WaitOpen(t, 4, 5*time.Second)

	stopped := time.Now()
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("shutdown did not end the streams")
	}
	if d := time.Since(stopped); d < 2*time.Second || d > 12*time.Second {
		t.Fatalf("shutdown took %v with SHUTDOWN_TIMEOUT 2s", d)
	}
	done, ended := 0, 0
	for range 4 {
		b := <-bodies
		switch {
		case strings.HasSuffix(b, "data: [DONE]\n\n"):
			done++
		case strings.Contains(b, "the gateway is shutting down"):
			ended++
		default:
			t.Errorf("stream ended neither properly nor with the shutdown error: %q", b)
		}
	}
	if done != 1 || ended != 3 {
		t.Fatalf("%d streams finished, %d ended by the shutdown; want 1 and 3", done, ended)
	}
	cfg := e.Config
	e.Stop() // App.Close, as main does after Serve
	// The stop's report counts what happened.
	if rep := e.App.LastStop(); rep.InFlight != 4 || rep.Drained != 1 || rep.Cut != 3 || rep.Settlements < 4 {
		t.Fatalf("stop report %+v: want 4 in flight, 1 drained, 3 cut, at least 4 settlements", rep)
	}

	e2 := apptest.Start(t, cfg)
	g2 := *g
	g2.Env, g2.Root = e2, e2.Root()
	logs := g2.ConsumeLogs()
	if len(logs) != 4 {
		t.Fatalf("%d consume logs after the restart, want 4: %+v", len(logs), logs)
	}
	for _, l := range logs {
		if l.Quota <= 0 || l.CompletionTokens <= 0 || l.CompletionTokens >= 5000 {
			t.Errorf("log %+v: want what was produced billed", l)
		}
	}
	if spent := before - g2.Quota(g.UserID); spent != apptest.SumQuota(logs) {
		t.Fatalf("balance fell by %d, logs sum to %d", spent, apptest.SumQuota(logs))
	}
	// No hold is left open (on SQLite holds live in memory only).
	if n, err := e2.App.Store.ReleaseStaleReservations(context.Background(), time.Now().Unix()+1); err != nil || n != 0 {
		t.Fatalf("%d reservations left open (%v)", n, err)
	}
}
