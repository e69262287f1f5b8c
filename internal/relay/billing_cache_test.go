package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/store"
)

// cachePrices is a model priced the way Anthropic bills (CNY per million
// tokens): cache reads at 0.1× input, 5-minute writes at 1.25×, 1-hour
// writes at 2×, and a long-context tier above 1000 prompt tokens at twice
// every price.
var cachePrices = map[string]any{
	"input_price": 3, "output_price": 15, "cached_price": 0.3, "cache_write_price": 3.75, "cache_write_1h_price": 6,
	"tiers": []map[string]any{{"above_prompt_tokens": 1000, "input_price": 6, "output_price": 22.5, "cached_price": 0.6,
		"cache_write_price": 7.5, "cache_write_1h_price": 12}},
}

// TestBillingCacheAndTiers checks, per dialect and for JSON and streams,
// that the balance moves by exactly the cost computed by hand from the
// upstream's usage: each part of the prompt (uncached, cache read, 5-minute
// and 1-hour cache write) once at its price, all at the prices of the tier
// the whole prompt falls in. Only Anthropic reports cache writes; the other
// dialects bill those tokens as the uncached input they report them as.
func TestBillingCacheAndTiers(t *testing.T) {
	apptest.Parallel(t)
	below := fakeupstream.Behavior{PromptTokens: 900, CachedTokens: 400, CacheWriteTokens: 200, CacheWrite1hTokens: 100, CompletionTokens: 50}
	above := fakeupstream.Behavior{PromptTokens: 1500, CachedTokens: 600, CacheWriteTokens: 300, CacheWrite1hTokens: 200, CompletionTokens: 100}
	messages := func(stream bool) map[string]any {
		return map[string]any{"model": "m", "max_tokens": 100, "stream": stream, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	}
	responses := func(stream bool) map[string]any { return map[string]any{"model": "m", "input": "hi", "stream": stream} }
	chat := func(stream bool) map[string]any { return chatBody("m", "hi", stream) }
	for _, tc := range []struct {
		name   string
		typ    int
		path   string
		body   func(stream bool) map[string]any
		writes bool // the dialect reports cache writes
	}{
		{"openai chat", channel.TypeOpenAI, "/v1/chat/completions", chat, false},
		{"openai responses", channel.TypeOpenAI, "/v1/responses", responses, false},
		{"anthropic messages", channel.TypeAnthropic, "/v1/messages", messages, true},
		{"anthropic channel, chat ingress", channel.TypeAnthropic, "/v1/chat/completions", chat, true},
		{"gemini channel", channel.TypeGemini, "/v1/chat/completions", chat, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ, Model: "m", InputPrice: 3, OutputPrice: 15})
			update := map[string]any{"id": g.ModelPriceID(t, "m")}
			for k, v := range cachePrices {
				update[k] = v
			}
			g.Root.OK("PUT", "/api/model_price/", update)
			for _, c := range []struct {
				b              fakeupstream.Behavior
				writes, noWrit int64  // the cost with and without cache writes reported
				tier           string // in the content line
			}{
				// 200×3 + 400×0.3 + 200×3.75 + 100×6 + 50×15; without writes 500×3 + 400×0.3 + 50×15.
				{below, 2820, 2370, ""},
				// 1500 > 1000: the tier for every part. 400×6 + 600×0.6 + 300×7.5 + 200×12 + 100×22.5;
				// without writes 900×6 + 600×0.6 + 100×22.5.
				// Read through the API: the count in zh's number format.
				{above, 9660, 8010, "上下文超过 1,000 tokens 档"},
			} {
				up.SetBehavior(c.b)
				want, wantWrite, wantWrite1h := c.noWrit, int64(0), int64(0)
				if tc.writes {
					want, wantWrite, wantWrite1h = c.writes, c.b.CacheWriteTokens, c.b.CacheWrite1hTokens
				}
				for _, stream := range []bool{false, true} {
					before, n := g.Accounts(), len(g.ConsumeLogs())
					r := e.Call(g.Key, "POST", tc.path, tc.body(stream), "anthropic-version", "2023-06-01")
					if r.Status != http.StatusOK {
						t.Fatalf("prompt %d, stream %v: %d %s", c.b.PromptTokens, stream, r.Status, r.Body)
					}
					l := checkBilled(t, g, before, n, want)
					if l.PromptTokens != c.b.PromptTokens || l.CachedTokens != c.b.CachedTokens || l.CompletionTokens != c.b.CompletionTokens ||
						l.CacheWriteTokens != wantWrite || l.CacheWrite1hTokens != wantWrite1h {
						t.Errorf("prompt %d, stream %v: log tokens %+v", c.b.PromptTokens, stream, l)
					}
					if c.tier != "" && !strings.Contains(l.Content, c.tier) || c.tier == "" && strings.Contains(l.Content, "档") {
						t.Errorf("prompt %d, stream %v: content %q, want tier %q", c.b.PromptTokens, stream, l.Content, c.tier)
					}
					if tc.writes && !strings.Contains(l.Content, "1 小时缓存写入") {
						t.Errorf("content %q does not show the cache-write prices", l.Content)
					}
				}
			}
		})
	}
}

// TestBillingInvalidStoredTiers: a price row whose tiers column does not
// decode or validate (written around the API, or by a peer that skipped
// validation) leaves its model unpriced, so long prompts are never billed
// at the base price; fixing the row through the API prices it again.
func TestBillingInvalidStoredTiers(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Model: "m"})
	id := g.ModelPriceID(t, "m")
	for _, bad := range []string{`not json`, `[{"above_prompt_tokens":0,"input_price":1}]`,
		`[{"above_prompt_tokens":10,"input_price":1,"surprise":1}]`, `[{"above_prompt_tokens":10,"input_price":-1}]`} {
		if _, err := e.App.Store.UpdateModelPrice(context.Background(), id, store.ModelPricePatch{Tiers: &bad}); err != nil {
			t.Fatal(err)
		}
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("m", "hi", false)); r.Status != http.StatusNotFound ||
			!strings.Contains(string(r.Body), "模型 m 未设置价格") {
			t.Fatalf("tiers %s: %d %s", bad, r.Status, r.Body)
		}
	}
	g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": id, "tiers": []any{}})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("m", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("after the fix: %d %s", r.Status, r.Body)
	}
}
