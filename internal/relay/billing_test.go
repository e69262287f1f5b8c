package relay_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay/tokencount"
)

// tokenCost is the quota of a call billed by tokens (docs/architecture.md, Money), computed
// here from the prices (CNY per 1M tokens) independently of the relay.
func tokenCost(input, output, cachedPrice float64, prompt, completion, cached int64, discount float64) int64 {
	if cachedPrice == 0 {
		cachedPrice = input
	}
	return int64(math.Round((input*float64(prompt-cached) + cachedPrice*float64(cached) + output*float64(completion)) * discount))
}

// chatBody is an OpenAI chat request with one user message.
func chatBody(model, content string, stream bool) map[string]any {
	body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": content}}}
	if stream {
		body["stream"] = true
	}
	return body
}

// checkBilled asserts that exactly one call was billed since before (when
// the user had logsBefore consume logs): the balance fell by want, the used
// quota of user, key and channel grew by want, and one new consume log of
// want appeared. It returns that log.
func checkBilled(t *testing.T, g *apptest.Gateway, before apptest.Accounts, logsBefore int, want int64) apptest.LogInfo {
	t.Helper()
	after := g.Accounts()
	logs := g.ConsumeLogs()
	if len(logs) != logsBefore+1 {
		t.Fatalf("%d consume logs, want %d: %+v", len(logs), logsBefore+1, logs)
	}
	l := logs[0]
	if l.Quota != want {
		t.Errorf("log quota %d, want %d (log %+v)", l.Quota, want, l)
	}
	moved := apptest.Accounts{Quota: before.Quota - after.Quota, UserUsed: after.UserUsed - before.UserUsed,
		TokenUsed: after.TokenUsed - before.TokenUsed, ChannelUsed: after.ChannelUsed - before.ChannelUsed}
	if (moved != apptest.Accounts{Quota: want, UserUsed: want, TokenUsed: want, ChannelUsed: want}) {
		t.Errorf("balance fell by %d, used quota grew by user %d, key %d, channel %d; want all %d",
			moved.Quota, moved.UserUsed, moved.TokenUsed, moved.ChannelUsed, want)
	}
	return l
}

func TestBillingExactJSONAndStream(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	want := tokenCost(2, 8, 0, 12, 8, 0, 1) // 24 + 64 = 88
	if want != 88 {
		t.Fatalf("test formula gives %d, want 88", want)
	}
	for i, tc := range []struct {
		name                 string
		stream, includeUsage bool
	}{{"json", false, false}, {"stream", true, false}, {"stream with include_usage", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			before, n := g.Accounts(), len(g.ConsumeLogs())
			body := chatBody("gpt-test", "hi", tc.stream)
			if tc.includeUsage {
				body["stream_options"] = map[string]bool{"include_usage": true}
			}
			reqID, session := fmt.Sprintf("billing-exact-%d", i), "session-"+tc.name
			r := e.Call(g.Key, "POST", "/v1/chat/completions", body, "X-Request-Id", reqID, "X-Session-Key", session)
			if r.Status != http.StatusOK {
				t.Fatalf("call: %d %s", r.Status, r.Body)
			}
			if tc.stream && !strings.Contains(string(up.LastRequest().Body), `"include_usage":true`) {
				t.Errorf("the upstream was not asked for stream usage: %s", up.LastRequest().Body)
			}
			if tc.stream && strings.Contains(string(r.Body), `"choices":[]`) != tc.includeUsage {
				t.Errorf("usage chunk shown to the client: %v, asked for: %v", !tc.includeUsage, tc.includeUsage)
			}
			l := checkBilled(t, g, before, n, want)
			wantLog := apptest.LogInfo{ID: l.ID, UserID: g.UserID, CreatedAt: l.CreatedAt, Type: 2, Content: l.Content,
				Username: "caller", TokenName: "relay", ModelName: "gpt-test", Group: "default", Quota: want,
				PromptTokens: 12, CompletionTokens: 8, ChannelID: g.ChannelID, RequestID: reqID,
				ElapsedTime: l.ElapsedTime, IsStream: tc.stream, SessionKey: session}
			if l != wantLog {
				t.Errorf("log\n got  %+v\n want %+v", l, wantLog)
			}
			if l.CreatedAt <= 0 || l.ElapsedTime < 0 || strings.Contains(l.Content, "估算") || !strings.Contains(l.Content, "分组倍率 1") {
				t.Errorf("log created_at %d, elapsed_time %d, content %q", l.CreatedAt, l.ElapsedTime, l.Content)
			}
			if got := r.Header.Get("X-Request-Id"); got != reqID {
				t.Errorf("X-Request-Id %q, want %q", got, reqID)
			}
		})
	}
}

// TestBillingDialectUsage checks that Anthropic and Gemini channels are
// billed from their own usage reports without double counting: Anthropic's
// message_start carries a first output token and message_delta the total;
// Gemini's usageMetadata is a running total on every event.
func TestBillingDialectUsage(t *testing.T) {
	apptest.Parallel(t)
	b := fakeupstream.Behavior{PromptTokens: 30, CompletionTokens: 20, CachedTokens: 10, Chunks: 4}
	want := tokenCost(2, 8, 0.5, 30, 20, 10, 1) // 40 + 5 + 160 = 205
	for _, tc := range []struct {
		name, path, model string
		typ               int
		body              func(stream bool) map[string]any
	}{
		{"anthropic channel", "/v1/chat/completions", "claude-test", channel.TypeAnthropic, nil},
		{"anthropic channel, messages ingress", "/v1/messages", "claude-test", channel.TypeAnthropic, func(stream bool) map[string]any {
			return map[string]any{"model": "claude-test", "max_tokens": 100, "stream": stream,
				"messages": []map[string]string{{"role": "user", "content": "hi"}}}
		}},
		{"gemini channel", "/v1/chat/completions", "gemini-test", channel.TypeGemini, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			up.SetBehavior(b)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ, Model: tc.model,
				InputPrice: 2, OutputPrice: 8, CachedPrice: 0.5})
			for _, stream := range []bool{true, false} {
				before, n := g.Accounts(), len(g.ConsumeLogs())
				body := chatBody(tc.model, "hi", stream)
				if tc.body != nil {
					body = tc.body(stream)
				}
				r := e.Call(g.Key, "POST", tc.path, body, "anthropic-version", "2023-06-01")
				if r.Status != http.StatusOK {
					t.Fatalf("stream %v: %d %s", stream, r.Status, r.Body)
				}
				l := checkBilled(t, g, before, n, want)
				if l.PromptTokens != 30 || l.CompletionTokens != 20 || l.CachedTokens != 10 || l.IsStream != stream {
					t.Errorf("stream %v: log tokens %d/%d/%d, is_stream %v; want 30/20/10", stream,
						l.PromptTokens, l.CompletionTokens, l.CachedTokens, l.IsStream)
				}
			}
		})
	}
}

func TestBillingGroupDiscount(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "group": "default,vip"})
	g.Root.OK("PUT", "/api/user/", map[string]any{"id": g.UserID, "group": "vip"})
	// vip is seeded with a discount of 1 for every model.
	g.Root.OK("PUT", "/api/group_price/", map[string]any{"id": groupPriceID(t, g, "vip", ""), "discount": 0.5})
	g.Root.OK("POST", "/api/group_price/", map[string]any{"group_name": "other", "discount": 0.1})

	for _, stream := range []bool{false, true} {
		before, n := g.Accounts(), len(g.ConsumeLogs())
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream)); r.Status != http.StatusOK {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
		l := checkBilled(t, g, before, n, tokenCost(2, 8, 0, 12, 8, 0, 0.5)) // 44
		if l.Group != "vip" || !strings.Contains(l.Content, "分组倍率 0.5") {
			t.Errorf("log group %q content %q", l.Group, l.Content)
		}
	}
	// A discount for the model beats the group's default.
	g.Root.OK("POST", "/api/group_price/", map[string]any{"group_name": "vip", "model_name": "gpt-test", "discount": 0.25})
	before, n := g.Accounts(), len(g.ConsumeLogs())
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	checkBilled(t, g, before, n, tokenCost(2, 8, 0, 12, 8, 0, 0.25)) // 22
}

// groupPriceID is the id of the group price of (group, model).
func groupPriceID(t *testing.T, g *apptest.Gateway, group, model string) int64 {
	t.Helper()
	var prices []struct {
		ID        int64  `json:"id"`
		GroupName string `json:"group_name"`
		ModelName string `json:"model_name"`
	}
	g.Root.OK("GET", "/api/group_price/?page_size=100", nil).Decode(t, &prices)
	for _, p := range prices {
		if p.GroupName == group && p.ModelName == model {
			return p.ID
		}
	}
	t.Fatalf("no group price for %q/%q in %+v", group, model, prices)
	return 0
}

func TestBillingPerRequestPrice(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": g.ModelPriceID(t, "gpt-test"),
		"billing_type": "per_request", "per_request_price": 0.015})
	want := int64(math.Round(0.015 * 1e6)) // 15000, whatever the tokens
	for _, stream := range []bool{false, true} {
		before, n := g.Accounts(), len(g.ConsumeLogs())
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream)); r.Status != http.StatusOK {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
		l := checkBilled(t, g, before, n, want)
		if l.PromptTokens != 12 || l.CompletionTokens != 8 || !strings.Contains(l.Content, "按次") {
			t.Errorf("log tokens %d/%d content %q", l.PromptTokens, l.CompletionTokens, l.Content)
		}
	}
}

func TestBillingCachedTokens(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 100, CachedTokens: 40, CompletionTokens: 10})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, InputPrice: 2, OutputPrice: 8, CachedPrice: 0.5})
	priceID := g.ModelPriceID(t, "gpt-test")
	for _, cachedPrice := range []float64{0.5, 0} {
		g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": priceID, "cached_price": cachedPrice})
		// 60×2 + 40×0.5 + 10×8 = 220; without a cache price 100×2 + 10×8 = 280.
		want := tokenCost(2, 8, cachedPrice, 100, 10, 40, 1)
		for _, stream := range []bool{false, true} {
			before, n := g.Accounts(), len(g.ConsumeLogs())
			if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream)); r.Status != http.StatusOK {
				t.Fatalf("call: %d %s", r.Status, r.Body)
			}
			l := checkBilled(t, g, before, n, want)
			if l.PromptTokens != 100 || l.CachedTokens != 40 || l.CompletionTokens != 10 {
				t.Errorf("cached price %g, stream %v: log tokens %d/%d/%d, want 100/40/10",
					cachedPrice, stream, l.PromptTokens, l.CachedTokens, l.CompletionTokens)
			}
		}
	}
}

// TestBillingMissingUsage checks the fallback when the upstream reports no
// usage: both sides are counted with the tokenizer, a stream's pieces as the
// one text they make, and the log says the tokens are estimated.
func TestBillingMissingUsage(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	reply := "The quick brown fox jumps over the lazy dog again and again"
	up.SetBehavior(fakeupstream.Behavior{OmitUsage: true, Reply: reply, Chunks: 7})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	var counter tokencount.Counter
	prompt := "Say hello to the billing test"
	wantPrompt, wantCompletion := counter.Count("gpt-test", prompt), counter.Count("gpt-test", reply)
	for _, stream := range []bool{false, true} {
		before, n := g.Accounts(), len(g.ConsumeLogs())
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", prompt, stream))
		if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"usage"`) {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
		l := checkBilled(t, g, before, n, tokenCost(2, 8, 0, wantPrompt, wantCompletion, 0, 1))
		if l.PromptTokens != wantPrompt || l.CompletionTokens != wantCompletion || !strings.Contains(l.Content, "估算") {
			t.Errorf("stream %v: log tokens %d/%d content %q; want %d/%d, marked estimated",
				stream, l.PromptTokens, l.CompletionTokens, l.Content, wantPrompt, wantCompletion)
		}
	}
}
