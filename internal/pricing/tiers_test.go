package pricing

import (
	"math"
	"testing"
)

// claude is priced the way Anthropic bills (per million tokens): reads at
// 0.1× input, 5-minute writes at 1.25×, 1-hour writes at 2×.
var claude = Price{InputPrice: 3, OutputPrice: 15, CachedPrice: 0.3, CacheWritePrice: 3.75, CacheWrite1hPrice: 6, BillingType: BillingToken}

// gemini has a long-context tier above 200k prompt tokens, as Gemini 2.5
// Pro is billed.
var gemini = Price{InputPrice: 1.25, OutputPrice: 10, CachedPrice: 0.3125, BillingType: BillingToken,
	Tiers: []Tier{{Above: 200_000, InputPrice: 2.5, OutputPrice: 15, CachedPrice: 0.625}}}

func TestQuotaCacheAndTiers(t *testing.T) {
	twoTiers := Price{InputPrice: 1, OutputPrice: 2, Tiers: []Tier{
		{Above: 1000, InputPrice: 10, OutputPrice: 20},
		{Above: 5000, InputPrice: 100, OutputPrice: 200, CachedPrice: 50, CacheWritePrice: 150, CacheWrite1hPrice: 300},
	}}
	tests := []struct {
		name  string
		price Price
		usage Usage
		want  int64
	}{
		// 1000×3 + 6000×0.3 + 2000×3.75 + 1000×6 + 500×15.
		{"every part at its price", claude, Usage{PromptTokens: 10_000, CachedTokens: 6000, CacheWriteTokens: 2000, CacheWrite1hTokens: 1000, CompletionTokens: 500}, 25_800},
		{"only 5-minute writes", claude, Usage{PromptTokens: 1000, CacheWriteTokens: 1000}, 3750},
		{"only 1-hour writes", claude, Usage{PromptTokens: 1000, CacheWrite1hTokens: 1000}, 6000},
		// Cache prices 0: every prompt token at the input price, whatever the split.
		{"zero cache prices are the input price", Price{InputPrice: 2, OutputPrice: 8},
			Usage{PromptTokens: 1000, CachedTokens: 100, CacheWriteTokens: 200, CacheWrite1hTokens: 300, CompletionTokens: 10}, 2080},
		{"zero 1-hour price only", Price{InputPrice: 2, CacheWritePrice: 2.5},
			Usage{PromptTokens: 1000, CacheWriteTokens: 200, CacheWrite1hTokens: 300}, 500*2 + 200*2.5 + 300*2},
		// Parts beyond the prompt are capped in order: reads 60, 5-minute
		// writes 40, 1-hour writes 0, uncached input 0.
		{"parts capped at the prompt", claude, Usage{PromptTokens: 100, CachedTokens: 60, CacheWriteTokens: 60, CacheWrite1hTokens: 10}, 168},
		{"negative writes ignored", claude, Usage{PromptTokens: 100, CacheWriteTokens: -50, CacheWrite1hTokens: -1}, 300},
		{"only cache writes used", Price{}, Usage{CacheWriteTokens: 5}, 1},
		// 200,000 is not above 200,000: base prices.
		{"at the tier threshold", gemini, Usage{PromptTokens: 200_000, CompletionTokens: 1000}, 260_000},
		// 200,001×2.5 + 1000×15 = 515,002.5, rounded half up.
		{"above the threshold", gemini, Usage{PromptTokens: 200_001, CompletionTokens: 1000}, 515_003},
		// The tier applies to the cached part too: 100,001×2.5 + 100,000×0.625 + 1000×15.
		{"tier with cache reads", gemini, Usage{PromptTokens: 200_001, CachedTokens: 100_000, CompletionTokens: 1000}, 327_503},
		// The tier is chosen by the whole prompt, cache reads and writes included.
		{"cache parts count for the tier", twoTiers, Usage{PromptTokens: 1001, CachedTokens: 1000}, 10 * 1001},
		{"below the first tier", twoTiers, Usage{PromptTokens: 1000, CompletionTokens: 1}, 1002},
		{"second tier", twoTiers, Usage{PromptTokens: 6000, CachedTokens: 1000, CacheWriteTokens: 1000, CacheWrite1hTokens: 1000, CompletionTokens: 1},
			3000*100 + 1000*50 + 1000*150 + 1000*300 + 200},
		// A tier's cache price 0 is the tier's input price, not the base cache price.
		{"tier zero cache price", twoTiers, Usage{PromptTokens: 2000, CachedTokens: 2000}, 20_000},
		{"tiers ignored per request", Price{PerRequestPrice: 0.01, BillingType: BillingPerRequest, Tiers: twoTiers.Tiers},
			Usage{PromptTokens: 10_000}, 10_000},
		{"saturates with cache writes", claude, Usage{PromptTokens: math.MaxInt64, CacheWrite1hTokens: math.MaxInt64}, MaxCallCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quota(tt.price, tt.usage, 1); got != tt.want {
				t.Errorf("Quota(%+v, %+v) = %d, want %d", tt.price, tt.usage, got, tt.want)
			}
		})
	}
}

func TestTokenPrices(t *testing.T) {
	if got, want := claude.TokenPrices(10), (Tier{InputPrice: 3, OutputPrice: 15, CachedPrice: 0.3, CacheWritePrice: 3.75, CacheWrite1hPrice: 6}); got != want {
		t.Errorf("claude: %+v, want %+v", got, want)
	}
	if got, want := gemini.TokenPrices(300_000), (Tier{Above: 200_000, InputPrice: 2.5, OutputPrice: 15, CachedPrice: 0.625, CacheWritePrice: 2.5, CacheWrite1hPrice: 2.5}); got != want {
		t.Errorf("gemini long: %+v, want %+v", got, want)
	}
	if got, want := (Price{InputPrice: 2}).TokenPrices(5), (Tier{InputPrice: 2, CachedPrice: 2, CacheWritePrice: 2, CacheWrite1hPrice: 2}); got != want {
		t.Errorf("zero cache prices: %+v, want %+v", got, want)
	}
}

// TestBound checks that the price reservations use covers every split of
// every prompt up to the bound, and is not dearer than it must be.
func TestBound(t *testing.T) {
	if got := claude.Bound(1000); got.InputPrice != 6 || got.OutputPrice != 15 || got.Tiers != nil {
		t.Errorf("claude bound %+v, want input 6 (the 1-hour write), output 15", got)
	}
	if got := gemini.Bound(200_000); got.InputPrice != 1.25 || got.OutputPrice != 10 {
		t.Errorf("gemini bound at the threshold %+v, want the base prices", got)
	}
	if got := gemini.Bound(200_001); got.InputPrice != 2.5 || got.OutputPrice != 15 {
		t.Errorf("gemini bound above the threshold %+v, want the tier's", got)
	}
	plain := Price{InputPrice: 2, OutputPrice: 8, CachedPrice: 0.5}
	if got := plain.Bound(100); got.InputPrice != 2 || got.OutputPrice != 8 || got.CachedPrice != 0 {
		t.Errorf("plain bound %+v", got)
	}
	// A cheaper higher tier never lowers the bound.
	cheaper := Price{InputPrice: 5, OutputPrice: 5, Tiers: []Tier{{Above: 10, InputPrice: 1, OutputPrice: 1}}}
	if got := cheaper.Bound(100); got.InputPrice != 5 || got.OutputPrice != 5 {
		t.Errorf("cheaper tier bound %+v", got)
	}
	for _, p := range []Price{claude, gemini, cheaper, {InputPrice: 1, OutputPrice: 2, Tiers: []Tier{{Above: 50, InputPrice: 3, CacheWrite1hPrice: 9}}}} {
		for _, bound := range []int64{1, 10, 49, 50, 51, 100, 200_000, 200_001, 300_000} {
			b := p.Bound(bound)
			for _, prompt := range []int64{0, 1, bound / 2, bound - 1, bound} {
				for _, u := range []Usage{
					{PromptTokens: prompt, CompletionTokens: 7},
					{PromptTokens: prompt, CachedTokens: prompt, CompletionTokens: 7},
					{PromptTokens: prompt, CacheWriteTokens: prompt, CompletionTokens: 7},
					{PromptTokens: prompt, CacheWrite1hTokens: prompt, CompletionTokens: 7},
					{PromptTokens: prompt, CachedTokens: prompt / 3, CacheWriteTokens: prompt / 3, CacheWrite1hTokens: prompt / 3, CompletionTokens: 7},
				} {
					if got, held := Quota(p, u, 1), Quota(b, Usage{PromptTokens: bound, CompletionTokens: 7}, 1); got > held {
						t.Errorf("%+v bound %d: %+v costs %d > %d held", p, bound, u, got, held)
					}
				}
			}
		}
	}
}

func TestValidateTiers(t *testing.T) {
	ok := Tier{Above: 1000, InputPrice: 1}
	for _, tt := range []struct {
		name  string
		tiers []Tier
		want  string
	}{
		{"none", nil, ""},
		{"one", []Tier{ok}, ""},
		{"ascending", []Tier{{Above: 1}, {Above: 2}, {Above: MaxTierAbove}}, ""},
		{"max tiers", validTiers(8), ""},
		{"too many", validTiers(9), MsgTiersTooMany},
		{"above 0", []Tier{{Above: 0}}, MsgTierAbove},
		{"above negative", []Tier{{Above: -5}}, MsgTierAbove},
		{"above too large", []Tier{{Above: MaxTierAbove + 1}}, MsgTierAbove},
		{"duplicate", []Tier{ok, ok}, MsgTierOrder},
		{"descending", []Tier{{Above: 2000}, ok}, MsgTierOrder},
		{"negative price", []Tier{{Above: 1, OutputPrice: -1}}, MsgTierPrice},
		{"NaN price", []Tier{{Above: 1, CachedPrice: math.NaN()}}, MsgTierPrice},
		{"price too high", []Tier{{Above: 1, CacheWrite1hPrice: MaxPrice + 1}}, MsgTierPrice},
		{"write price Inf", []Tier{{Above: 1, CacheWritePrice: math.Inf(1)}}, MsgTierPrice},
	} {
		if got := ValidateTiers(tt.tiers); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// validTiers returns n valid ascending tiers.
func validTiers(n int) []Tier {
	out := make([]Tier, n)
	for i := range out {
		out[i] = Tier{Above: int64(i+1) * 1000}
	}
	return out
}
