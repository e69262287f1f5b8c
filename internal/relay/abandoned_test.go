package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/tokencount"
)

// abandonReply is streamed in 8 deltas; a client reads the first and
// leaves.
const abandonReply = "alpha bravo charlie delta echo foxtrot golf hotel"

// streamPaths are the stream relays, by ingress and channel dialect: each
// must keep reading an abandoned upstream for its usage.
var streamPaths = []struct {
	name string
	typ  int
	path string
	// finalOnlyUsage: the upstream reports usage only at the end, after
	// UsageDelay (Gemini reports running totals on every event instead).
	finalOnlyUsage bool
}{
	{"openai", 1, "/v1/chat/completions", true},
	{"anthropic", 14, "/v1/messages", true},
	{"anthropic to openai ingress", 14, "/v1/chat/completions", true},
	{"openai to messages ingress", 1, "/v1/messages", true},
	{"gemini to openai ingress", 24, "/v1/chat/completions", false},
}

// leaveStream starts a stream (its limit of 6,000 tokens covers the 5,000
// the fake reports, so strict billing holds enough), reads until the first
// content delta arrives and disconnects; it returns when the client is gone.
func leaveStream(t *testing.T, e *apptest.Env, key, path string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": true, "max_tokens": 6000, "messages": streamHi})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.Server.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first delta: %v", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, "alp") {
			return
		}
	}
}

// A client that leaves a stream before its usage is billed what the
// upstream reports at the end (5,000 tokens of hidden work), not a local
// count of the few visible tokens it saw: the relay reads on for the grace.
func TestAbandonedStreamIsBilledTheUpstreamsUsage(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range streamPaths {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			// A grace far longer than the usage's delay: the call ending
			// well before it shows the relay stops reading once the usage
			// came, whatever the machine's load.
			g.SetOption("StreamDrainSeconds", "120")
			up.SetBehavior(fakeupstream.Behavior{Reply: abandonReply, Chunks: 8, ChunkDelay: 50 * time.Millisecond,
				UsageDelay: 500 * time.Millisecond, PromptTokens: 12, CompletionTokens: 5000})
			before := g.Accounts()
			leaveStream(t, e, g.Key, tc.path)
			left := time.Now()
			up.WaitOpen(t, 0, 90*time.Second)
			if d := time.Since(left); d > 60*time.Second {
				t.Fatalf("upstream call ended %v after the client left: the relay waited out the grace instead of stopping at the usage", d)
			}
			logs := g.ConsumeLogs()
			if len(logs) != 1 {
				t.Fatalf("%d consume logs, want 1: %+v", len(logs), logs)
			}
			const want = 12*2 + 5000*8 // prices 2 and 8 CNY per 1M tokens
			if l := logs[0]; l.PromptTokens != 12 || l.CompletionTokens != 5000 || l.Quota != want || strings.Contains(l.Content, "估算") {
				t.Fatalf("log %+v: want the upstream's usage 12+5000 billed %d", l, want)
			}
			after := g.Accounts()
			if spent := before.Quota - after.Quota; spent != want || after.TokenUsed-before.TokenUsed != want {
				t.Fatalf("balance fell by %d, key used %d; want %d", spent, after.TokenUsed-before.TokenUsed, want)
			}
		})
	}
}

// When no usage comes within the grace (the upstream sends none, or sends
// it too late), the call is billed the local count of everything the
// upstream sent, not only of what reached the client; the upstream call
// ends when the grace does.
func TestAbandonedStreamWithoutUsageIsBilledAllTheUpstreamSent(t *testing.T) {
	apptest.Parallel(t)
	var counter tokencount.Counter
	whole := counter.Count("gpt-test", abandonReply)
	for _, tc := range streamPaths {
		for _, late := range []bool{false, true} {
			if late && !tc.finalOnlyUsage {
				continue
			}
			name := tc.name + " no usage"
			b := fakeupstream.Behavior{Reply: abandonReply, Chunks: 8, ChunkDelay: 50 * time.Millisecond, OmitUsage: true}
			if late {
				name = tc.name + " usage after the grace"
				b = fakeupstream.Behavior{Reply: abandonReply, Chunks: 8, ChunkDelay: 50 * time.Millisecond,
					UsageDelay: 10 * time.Minute, CompletionTokens: 5000}
			}
			t.Run(name, func(t *testing.T) {
				e := apptest.New(t)
				up := fakeupstream.New(t)
				g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
				g.SetOption("StreamDrainSeconds", "2")
				up.SetBehavior(b)
				before := g.Quota(g.UserID)
				leaveStream(t, e, g.Key, tc.path)
				left := time.Now()
				up.WaitOpen(t, 0, 90*time.Second)
				// The grace (2 s) ends the call: never before it, and long
				// before the usage (10 min) would have; the upper bound is
				// loose because a loaded -race run is slow to cancel.
				if d := time.Since(left); late && (d < 1500*time.Millisecond || d > 60*time.Second) {
					t.Fatalf("upstream call ended %v after the client left; the grace is 2 s", d)
				}
				logs := g.ConsumeLogs()
				if len(logs) != 1 {
					t.Fatalf("%d consume logs, want 1: %+v", len(logs), logs)
				}
				if l := logs[0]; l.CompletionTokens != whole || l.Quota <= 0 || !strings.Contains(l.Content, "估算") {
					t.Fatalf("log %+v: want the local count %d of the whole reply", l, whole)
				}
				if spent := before - g.Quota(g.UserID); spent != logs[0].Quota {
					t.Fatalf("spent %d, logged %d", spent, logs[0].Quota)
				}
			})
		}
	}
}
