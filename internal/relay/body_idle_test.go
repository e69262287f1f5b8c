package relay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// bodyIdlePaths are the non-streaming answer reads (copyJSON, convertJSON,
// the Anthropic passthrough's) under each ingress's error shape.
var bodyIdlePaths = []struct {
	name string
	typ  int
	path string
	// anthropic: the client gets Anthropic's error shape.
	anthropic bool
}{
	{"openai passthrough", 1, "/v1/chat/completions", false},
	{"responses passthrough", 1, "/v1/responses", false},
	{"anthropic passthrough", 14, "/v1/messages", true},
	{"anthropic to chat", 14, "/v1/chat/completions", false},
	{"gemini to chat", 24, "/v1/chat/completions", false},
	{"openai to messages", 1, "/v1/messages", true},
}

// bodyIdleCall is a non-streaming call for path.
func bodyIdleCall(path string) map[string]any {
	if path == "/v1/responses" {
		return map[string]any{"model": "gpt-test", "max_output_tokens": 100, "input": "hi"}
	}
	return map[string]any{"model": "gpt-test", "max_tokens": 100, "messages": streamHi}
}

// callAsync sends a /v1 call from another goroutine; the answer comes on
// the channel once the relay answered in full.
func callAsync(t *testing.T, e *apptest.Env, key, path string, body any) <-chan *apptest.V1 {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", e.Server.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	out := make(chan *apptest.V1, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- &apptest.V1{Body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- &apptest.V1{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}()
	return out
}

// answer waits for the call's answer; a minute is a bound no loaded
// machine reaches.
func answer(t *testing.T, c <-chan *apptest.V1) *apptest.V1 {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(time.Minute):
		t.Fatal("the call did not end")
		return nil
	}
}

// checkBodyIdleError checks a 504 in the ingress's shape saying the
// upstream's answer stalled for secs.
func checkBodyIdleError(t *testing.T, r *apptest.V1, anthropic bool, secs string) {
	t.Helper()
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if r.Status != http.StatusGatewayTimeout || json.Unmarshal(r.Body, &body) != nil {
		t.Fatalf("want 504, got %d %s", r.Status, r.Body)
	}
	ok := strings.Contains(body.Error.Message, " "+secs+" ")
	if anthropic {
		ok = ok && body.Type == "error" && body.Error.Type == "timeout_error"
	} else {
		ok = ok && body.Error.Type == "upstream_error" && body.Error.Code == "upstream_body_idle_timeout"
	}
	if !ok {
		t.Fatalf("504 body %s: want the ingress's error shape saying %s s", r.Body, secs)
	}
}

// A non-streaming answer whose upstream sends its headers and then part of
// its body, or nothing, and keeps the connection open is ended once no
// byte came for StreamIdleTimeoutSeconds: the client gets 504 in its
// ingress's shape, nothing is billed or held, each attempt leaves an
// upstream_body_idle_timeout error row and counts against the channel's
// breaker.
func TestBodyIdleTimeoutEndsAStalledAnswer(t *testing.T) {
	apptest.Parallel(t)
	const idle = 300 * time.Second // the default
	for _, tc := range bodyIdlePaths {
		t.Run(tc.name, func(t *testing.T) {
			e, clock, timers := timedEnv(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			before := g.Accounts()
			for _, sent := range []int{0, 10} { // nothing of the body; its first 10 bytes
				steps := make(chan int)
				up.SetBehavior(fakeupstream.Behavior{BodySteps: steps})
				arms := timers.Arms()
				res := callAsync(t, e, g.Key, tc.path, bodyIdleCall(tc.path))
				timers.WaitArms(t, arms+1) // the first read of the body waits
				if sent > 0 {
					steps <- sent
					timers.WaitArms(t, arms+2) // the read after those bytes waits
				}
				clock.Advance(idle - time.Second)
				if n := timers.FireDue(); n != 0 {
					t.Fatalf("sent %d: the body idle timer fired before its %v", sent, idle)
				}
				clock.Advance(time.Second)
				if n := timers.FireDue(); n != 1 {
					t.Fatalf("sent %d: %d timers fired after %v, want 1", sent, n, idle)
				}
				checkBodyIdleError(t, answer(t, res), tc.anthropic, "300")
			}
			if after := g.Accounts(); after != before {
				t.Fatalf("accounts %+v after stalled answers, want unchanged %+v", after, before)
			}
			if logs := g.ConsumeLogs(); len(logs) != 0 {
				t.Fatalf("consume logs of stalled answers: %+v", logs)
			}
			rows := errorLogs(t, e, g.Root, "/api/log/", nil)
			if len(rows) != 2 {
				t.Fatalf("error rows %+v, want one per stalled answer", rows)
			}
			for _, row := range rows {
				if row.ErrorCode != "upstream_body_idle_timeout" || row.Status != http.StatusOK || row.ChannelID != g.ChannelID ||
					!strings.Contains(row.Content, "300") || !strings.Contains(row.UpstreamMessage, "StreamIdleTimeoutSeconds") {
					t.Fatalf("error row %+v, want upstream_body_idle_timeout on the channel", row)
				}
			}
			l := apptest.OKData[breakerList](g.Root, "GET", apptest.Path("/api/channel/breakers/%d", g.ChannelID), nil)
			if len(l.Breakers) != 1 || l.Breakers[0].WindowFailures != 2 || len(l.Breakers[0].LastErrors) == 0 ||
				!strings.Contains(l.Breakers[0].LastErrors[0].Message, "nothing of its answer") {
				t.Fatalf("breakers %+v, want the two stalls counted against the channel", l.Breakers)
			}
			// Nothing stays held: a whole answer is billed exactly its log.
			up.SetBehavior(fakeupstream.Behavior{})
			before = g.Accounts()
			if r := e.Call(g.Key, "POST", tc.path, bodyIdleCall(tc.path)); r.Status != http.StatusOK {
				t.Fatalf("a whole answer after the stalls: %d %s", r.Status, r.Body)
			}
			logs := g.ConsumeLogs()
			if after := g.Accounts(); len(logs) != 1 || before.Quota-after.Quota != logs[0].Quota {
				t.Fatalf("balance %d → %d, logs %+v", before.Quota, after.Quota, logs)
			}
		})
	}
}

// A body whose bytes keep coming, each within the timeout, is not cut,
// however long it takes in all, and is billed as usual; the bound applies
// with the option's value (here 10 s).
func TestBodyIdleTimeoutSparesASlowAnswer(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range []struct {
		name string
		typ  int
	}{{"openai passthrough", 1}, {"gemini to chat", 24}} {
		t.Run(tc.name, func(t *testing.T) {
			e, clock, timers := timedEnv(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			g.SetOption("StreamIdleTimeoutSeconds", "10")
			steps := make(chan int)
			up.SetBehavior(fakeupstream.Behavior{BodySteps: steps, Reply: "slow but sure"})
			arms := timers.Arms()
			res := callAsync(t, e, g.Key, "/v1/chat/completions", bodyIdleCall("/v1/chat/completions"))
			timers.WaitArms(t, arms+1)
			for range 6 { // 6 × 8 s: the answer takes 4.8 × the timeout
				clock.Advance(8 * time.Second)
				if n := timers.FireDue(); n != 0 {
					t.Fatal("the body idle timer fired 8 s after the last bytes")
				}
				arms = timers.Arms()
				steps <- 8
				timers.WaitArms(t, arms+1) // the next read waits again
			}
			close(steps) // the rest
			r := answer(t, res)
			var body struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
			}
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &body) != nil || len(body.Choices) != 1 ||
				body.Choices[0].Message.Content != "slow but sure" {
				t.Fatalf("want the whole answer, got %d %s", r.Status, r.Body)
			}
			if logs := g.ConsumeLogs(); len(logs) != 1 || logs[0].Quota <= 0 {
				t.Fatalf("consume logs %+v, want the call billed once", logs)
			}
			if rows := errorLogs(t, e, g.Root, "/api/log/", nil); len(rows) != 0 {
				t.Fatalf("error rows %+v for a whole answer", rows)
			}
		})
	}
}

// A stalled answer is a failed attempt like an upstream 5xx: nothing
// reached the client, so the next channel answers, and only its answer is
// billed.
func TestBodyIdleTimeoutRetriesOnTheNextChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	clock := apptest.NewClock(time.Now())
	timers := apptest.NewTimers(clock)
	f.e.UseTimers(timers)
	f.ups[0].SetBehavior(fakeupstream.Behavior{BodySteps: make(chan int)})
	res := callAsync(t, f.e, f.g.Key, "/v1/chat/completions", bodyIdleCall("/v1/chat/completions"))
	timers.WaitArms(t, 1)
	clock.Advance(300 * time.Second)
	if n := timers.FireDue(); n != 1 {
		t.Fatalf("%d timers fired, want 1", n)
	}
	wantReply(t, answer(t, res), "up1")
	wantCounts(t, f, 1, 1)
	if logs := f.g.ConsumeLogs(); len(logs) != 1 || logs[0].ChannelID != f.ids[1] {
		t.Fatalf("consume logs %+v, want one, on the channel that answered", logs)
	}
	rows := errorLogs(t, f.e, f.g.Root, "/api/log/", nil)
	if len(rows) != 1 || rows[0].ErrorCode != "upstream_body_idle_timeout" || rows[0].ChannelID != f.ids[0] {
		t.Fatalf("error rows %+v, want the stalled attempt's", rows)
	}
}
