package billing

import (
	"math"
	"testing"
	"unicode"

	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Prices in CNY per million tokens, so one token costs its price in quota.
var (
	tokenPrice = pricing.Price{InputPrice: 2, OutputPrice: 8, BillingType: pricing.BillingToken}
	freeOutput = pricing.Price{InputPrice: 2, BillingType: pricing.BillingToken}
	perRequest = pricing.Price{PerRequestPrice: 0.01, BillingType: pricing.BillingPerRequest}
)

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		name string
		call Call
		want pricing.Usage
		cost int64
	}{
		{"the default completion is a floor", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 10, DefaultMaxTokens: 50},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 50}, 2*100 + 8*50},
		{"a larger limit counts", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 500, DefaultMaxTokens: 50},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 500}, 2*100 + 8*500},
		{"every choice", Call{Price: tokenPrice, Discount: 0.5, PromptBound: 100, MaxTokens: 500, Choices: 3},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 1500}, (2*100 + 8*1500) / 2},
		{"embeddings have no completion", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 500, DefaultMaxTokens: 50, Kind: KindEmbeddings},
			pricing.Usage{PromptTokens: 100}, 200},
		{"choices saturate", Call{Price: tokenPrice, Discount: 1, PromptBound: 1, MaxTokens: math.MaxInt64 / 2, Choices: 3},
			pricing.Usage{PromptTokens: 1, CompletionTokens: math.MaxInt64}, pricing.MaxCallCost},
		{"per request", Call{Price: perRequest, Discount: 2, PromptBound: 100, MaxTokens: 500}, pricing.Usage{PromptTokens: 100, CompletionTokens: 500}, 20000},
		{"an open call holds the model's output limit", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, DefaultMaxTokens: 50, OutputLimit: 800, Choices: 2},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 1600}, 2*100 + 8*1600},
		{"a model limit below the default", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, DefaultMaxTokens: 50, OutputLimit: 20},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 20}, 2*100 + 8*20},
		{"the floor never passes the model's limit", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 10, DefaultMaxTokens: 50, OutputLimit: 30},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 30}, 2*100 + 8*30},
		{"a client limit above the model's is held as asked", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 90, DefaultMaxTokens: 50, OutputLimit: 30},
			pricing.Usage{PromptTokens: 100, CompletionTokens: 90}, 2*100 + 8*90},
	} {
		if got := EstimateTokens(&tc.call); got != tc.want {
			t.Errorf("%s: tokens %+v, want %+v", tc.name, got, tc.want)
		}
		if got := Estimate(&tc.call); got != tc.cost {
			t.Errorf("%s: cost %d, want %d", tc.name, got, tc.cost)
		}
	}
}

func TestLeastHoldAndCompletionCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		call  Call
		least int64
		caps  bool
	}{
		{"per request: its price", Call{Price: perRequest, Discount: 1, PromptBound: 100, Kind: KindChat}, 10000, false},
		{"embeddings: the prompt", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindEmbeddings}, 200, false},
		{"chat with a limit: prompt and limit", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 10, Choices: 2, Kind: KindChat}, 200 + 8*20, false},
		{"responses with a limit", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 10, Kind: KindResponses}, 200 + 80, false},
		{"open chat: prompt and a token per choice", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Choices: 3, Kind: KindChat}, 200 + 8*3, true},
		{"open responses", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindResponses}, 208, true},
		{"an upload is never capped", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindChat, Multipart: true}, 0, false},
		{"images and audio: any balance", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, MaxTokens: 10, Kind: KindOther}, 0, false},
	} {
		if got := LeastHold(&tc.call); got != tc.least {
			t.Errorf("%s: least hold %d, want %d", tc.name, got, tc.least)
		}
		if got := CapsCompletion(&tc.call); got != tc.caps {
			t.Errorf("%s: caps completion %v, want %v", tc.name, got, tc.caps)
		}
	}
}

func TestCompletionLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		call   Call
		amount int64
		want   int64
	}{
		{"what the rest buys", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindChat}, 200 + 8*50, 50},
		{"shared by the choices", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Choices: 4, Kind: KindChat}, 200 + 8*50, 12},
		{"not one token", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindChat}, 203, -1},
		{"not one token each", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Choices: 2, Kind: KindChat}, 208, -1},
		{"responses need 16", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindResponses}, 200 + 8*15, -1},
		{"responses at 16", Call{Price: tokenPrice, Discount: 1, PromptBound: 100, Kind: KindResponses}, 200 + 8*16, 16},
		{"a free completion needs no limit", Call{Price: freeOutput, Discount: 1, PromptBound: 100, Kind: KindChat}, 200, 0},
		{"at most what a limit field holds", Call{Price: pricing.Price{InputPrice: 1, OutputPrice: 0.000001, BillingType: pricing.BillingToken}, Discount: 1, PromptBound: 1, Kind: KindChat},
			1 << 40, MaxCompletionSent},
	} {
		if got := CompletionLimit(&tc.call, tc.amount); got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCost(t *testing.T) {
	used := pricing.Usage{PromptTokens: 100, CompletionTokens: 50} // 600
	for _, tc := range []struct {
		name              string
		strict            bool
		held              int64
		cost, uncollected int64
	}{
		{"within the hold", true, 1000, 600, 0},
		{"strict: never more than the hold", true, 500, 500, 100},
		{"overrun allowed: the whole cost", false, 500, 600, 0},
	} {
		c := Call{Price: tokenPrice, Discount: 1, Strict: tc.strict}
		cost, uncollected := Cost(&c, used, tc.held)
		if cost != tc.cost || uncollected != tc.uncollected {
			t.Errorf("%s: cost %d uncollected %d, want %d and %d", tc.name, cost, uncollected, tc.cost, tc.uncollected)
		}
	}
}

func TestConsumeContent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		price       pricing.Price
		usage       pricing.Usage
		estimated   bool
		uncollected int64
		want        string
	}{
		{"token", pricing.Price{InputPrice: 2, OutputPrice: 8, CachedPrice: 0.5, BillingType: pricing.BillingToken}, pricing.Usage{PromptTokens: 10}, false, 0,
			"输入 2 元/百万 tokens, 输出 8 元/百万 tokens, 缓存 0.5 元/百万 tokens, 分组倍率 0.8"},
		// The prices applied: cache prices of 0 are the input price, the
		// write prices appear when the call wrote, the tier is named.
		{"cache writes", pricing.Price{InputPrice: 3, OutputPrice: 15, CacheWrite1hPrice: 6}, pricing.Usage{PromptTokens: 10, CacheWriteTokens: 1, CacheWrite1hTokens: 1}, false, 0,
			"输入 3 元/百万 tokens, 输出 15 元/百万 tokens, 缓存 3 元/百万 tokens, 缓存写入 3 元/百万 tokens, 1 小时缓存写入 6 元/百万 tokens, 分组倍率 0.8"},
		{"tier", pricing.Price{InputPrice: 1, OutputPrice: 2, Tiers: []pricing.Tier{{Above: 100, InputPrice: 4, OutputPrice: 8, CachedPrice: 1}}},
			pricing.Usage{PromptTokens: 101, CachedTokens: 50}, false, 0,
			"输入 4 元/百万 tokens, 输出 8 元/百万 tokens, 缓存 1 元/百万 tokens, 上下文超过 100 tokens 档, 分组倍率 0.8"},
		{"per request, estimated, uncollected", perRequest, pricing.Usage{}, true, 7,
			"按次 0.01 元, 分组倍率 0.8 (上游未返回用量, tokens 为本地估算) (超出预扣 7 额度未收取)"},
	} {
		if got := consumeContent(tc.price, tc.usage, 0.8, tc.estimated, tc.uncollected); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestConsumeContentRenders: every shape of consume content billing writes
// follows the grammar logtext reads, so an English reader never sees a
// consume row in Chinese (issue 30 §2); data-free prices use 'g' notation.
func TestConsumeContentRenders(t *testing.T) {
	tiered := pricing.Price{InputPrice: 0.000025, OutputPrice: 1e6, Tiers: []pricing.Tier{{Above: 200000, InputPrice: 4, OutputPrice: 8, CachedPrice: 1}}}
	for _, p := range []pricing.Price{tokenPrice, cacheTierPrice, perRequest, tiered} {
		for _, u := range []pricing.Usage{{PromptTokens: 10}, {PromptTokens: 300000, CacheWriteTokens: 1, CacheWrite1hTokens: 1}} {
			for _, est := range []bool{false, true} {
				for _, unc := range []int64{0, 123456789} {
					content := consumeContent(p, u, 0.85, est, unc)
					if got := logtext.Render(msgtext.English, store.LogConsume, content); hasHan(got) {
						t.Errorf("%q renders in English as %q", content, got)
					}
				}
			}
		}
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// The rules run on every call: they must not allocate.
func TestRulesDoNotAllocate(t *testing.T) {
	for _, p := range []pricing.Price{tokenPrice, cacheTierPrice} {
		c := Call{Price: p, Discount: 1, PromptBound: 2000, Choices: 2, Kind: KindChat, Strict: true, DefaultMaxTokens: 50}
		n := testing.AllocsPerRun(100, func() {
			_ = Estimate(&c) + LeastHold(&c) + CompletionLimit(&c, 10_000)
			_, _ = Cost(&c, pricing.Usage{PromptTokens: 1500, CompletionTokens: 10, CachedTokens: 5, CacheWrite1hTokens: 5}, 100)
		})
		if n != 0 {
			t.Fatalf("%v allocations per call, want 0", n)
		}
	}
}

// cacheTierPrice has cache-write prices above the input price and a tier
// above 1000 prompt tokens.
var cacheTierPrice = pricing.Price{InputPrice: 3, OutputPrice: 15, CachedPrice: 0.3, CacheWritePrice: 3.75, CacheWrite1hPrice: 6,
	Tiers: []pricing.Tier{{Above: 1000, InputPrice: 6, OutputPrice: 22.5, CacheWrite1hPrice: 12}}}

// TestHoldCoversCacheAndTiers: a reservation prices every prompt token at
// the dearest prompt price of the tiers the prompt bound reaches, so the
// settled cost of any split of that prompt fits in the hold.
func TestHoldCoversCacheAndTiers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound int64
		want  int64 // LeastHold of a chat with max_tokens 10
	}{
		{"below the tier: the 1-hour write price", 1000, 1000*6 + 10*15},
		{"above the tier: its 1-hour write price and output", 1001, 1001*12 + 10*22.5},
	} {
		c := Call{Price: cacheTierPrice, Discount: 1, PromptBound: tc.bound, MaxTokens: 10, Kind: KindChat, Strict: true}
		if got := LeastHold(&c); got != tc.want {
			t.Errorf("%s: LeastHold %d, want %d", tc.name, got, tc.want)
		}
		worst := pricing.Usage{PromptTokens: tc.bound, CacheWrite1hTokens: tc.bound, CompletionTokens: 10}
		if cost, uncollected := Cost(&c, worst, LeastHold(&c)); uncollected != 0 || cost != tc.want {
			t.Errorf("%s: all 1-hour writes cost %d, %d uncollected", tc.name, cost, uncollected)
		}
	}
}

// coverOutput: a charge whose limit reaches the model's output limit
// covers it (the limit then exactly the model's); one below does not.
func TestCoverOutput(t *testing.T) {
	c := &Call{OutputLimit: 32000}
	for _, tc := range []struct {
		limit, want int64
		covered     bool
	}{{0, 32000, true}, {32000, 32000, true}, {32011, 32000, true}, {31999, 31999, false}} {
		ch := Charge{CompletionLimit: tc.limit}
		coverOutput(c, &ch)
		if ch.CompletionLimit != tc.want || ch.Covered != tc.covered {
			t.Errorf("limit %d: got %d covered %v, want %d %v", tc.limit, ch.CompletionLimit, ch.Covered, tc.want, tc.covered)
		}
	}
	ch := Charge{CompletionLimit: 100}
	coverOutput(&Call{}, &ch)
	if ch.Covered || ch.CompletionLimit != 100 {
		t.Errorf("a model without a limit: %+v", ch)
	}
}
