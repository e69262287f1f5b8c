package pricing

import (
	"math"
	"strings"
	"testing"
)

func TestQuota(t *testing.T) {
	gpt := Price{InputPrice: 2.5, OutputPrice: 10, CachedPrice: 1.25, BillingType: BillingToken}
	noCache := Price{InputPrice: 2, OutputPrice: 8, BillingType: BillingToken}
	perReq := Price{InputPrice: 99, PerRequestPrice: 0.05, BillingType: BillingPerRequest}
	tests := []struct {
		name     string
		price    Price
		usage    Usage
		discount float64
		want     int64
	}{
		// 1000 × 2.5 + 500 × 10 = 2500 + 5000 micro-yuan.
		{"input and output", gpt, Usage{PromptTokens: 1000, CompletionTokens: 500}, 1, 7500},
		// (1000−400) × 2.5 + 400 × 1.25 + 500 × 10 = 1500 + 500 + 5000.
		{"cached at cache price", gpt, Usage{PromptTokens: 1000, CompletionTokens: 500, CachedTokens: 400}, 1, 7000},
		// Cache price 0: cached tokens at the input price, same as uncached.
		{"no cache price", noCache, Usage{PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 400}, 1, 2800},
		{"discount", gpt, Usage{PromptTokens: 1000, CompletionTokens: 500}, 0.8, 6000},
		{"discount above 1", gpt, Usage{PromptTokens: 1000, CompletionTokens: 500}, 1.5, 11250},
		// 3 × 2.5 = 7.5 rounds half away from zero.
		{"round half up", gpt, Usage{PromptTokens: 3}, 1, 8},
		// 1 × 2.5 × 0.5 = 1.25 rounds down.
		{"round down", gpt, Usage{PromptTokens: 1}, 0.5, 1},
		{"tiny use costs 1", Price{InputPrice: 0.01, BillingType: BillingToken}, Usage{PromptTokens: 1}, 1, 1},
		{"free model still costs 1", Price{BillingType: BillingToken}, Usage{CompletionTokens: 10}, 1, 1},
		{"only cached tokens used", gpt, Usage{CachedTokens: 5}, 1, 1},
		{"nothing used is free", gpt, Usage{}, 1, 0},
		// Cached beyond the prompt is capped at the prompt: 10 × 1.25.
		{"cached beyond prompt", gpt, Usage{PromptTokens: 10, CachedTokens: 50}, 1, 13},
		{"negative counts ignored", gpt, Usage{PromptTokens: -100, CompletionTokens: 100}, 1, 1000},
		{"empty billing type is token", Price{InputPrice: 1}, Usage{PromptTokens: 7}, 1, 7},
		// 0.05 CNY × 1e6 = 50000, usage ignored.
		{"per request", perReq, Usage{PromptTokens: 1_000_000}, 1, 50000},
		{"per request discount", perReq, Usage{}, 0.8, 40000},
		{"per request free still costs 1", Price{BillingType: BillingPerRequest}, Usage{}, 1, 1},
		// Absurd counts or prices are billed at the per-call cap, never a
		// value that would overflow a balance or counter column.
		{"saturates", Price{InputPrice: 1e6, BillingType: BillingToken}, Usage{PromptTokens: math.MaxInt64}, 10, MaxCallCost},
		{"all counts at int64 max", Price{InputPrice: MaxPrice, OutputPrice: MaxPrice, CachedPrice: MaxPrice},
			Usage{PromptTokens: math.MaxInt64, CompletionTokens: math.MaxInt64, CachedTokens: math.MaxInt64}, MaxDiscount, MaxCallCost},
		{"huge price", Price{OutputPrice: 1e308}, Usage{CompletionTokens: 1}, 1, MaxCallCost},
		{"infinite price", Price{OutputPrice: math.Inf(1)}, Usage{CompletionTokens: 1}, 1, MaxCallCost},
		{"huge per request", Price{PerRequestPrice: 1e308, BillingType: BillingPerRequest}, Usage{}, MaxDiscount, MaxCallCost},
		{"max per request price", Price{PerRequestPrice: MaxPrice, BillingType: BillingPerRequest}, Usage{}, 1, MaxCallCost},
		{"just below the cap", Price{OutputPrice: 1000}, Usage{CompletionTokens: 999_999_999}, 1, 999_999_999_000},
		{"NaN price costs 1", Price{InputPrice: math.NaN()}, Usage{PromptTokens: 1}, 1, 1},
		// One billion tokens at 75 CNY/1M: 75000 CNY, exact in float64.
		{"large exact", Price{OutputPrice: 75}, Usage{CompletionTokens: 1_000_000_000}, 1, 75_000_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quota(tt.price, tt.usage, tt.discount); got != tt.want {
				t.Errorf("Quota(%+v, %+v, %v) = %d, want %d", tt.price, tt.usage, tt.discount, got, tt.want)
			}
		})
	}
}

func TestDiscount(t *testing.T) {
	prices := []GroupPrice{
		{Group: "default", Discount: 1},
		{Group: "vip", Model: "gpt-4o", Discount: 0.5},
		{Group: "vip", Discount: 0.8},
		{Group: "svip", Model: "gpt-4o", Discount: 0.6},
		{Group: "broken", Discount: 0},
		{Group: "broken", Model: "m", Discount: math.NaN()},
	}
	tests := []struct {
		group, model string
		want         float64
	}{
		{"vip", "gpt-4o", 0.5},     // (group, model)
		{"vip", "claude", 0.8},     // (group, "")
		{"vip", "", 0.8},           // an empty model is the group default
		{"svip", "gpt-4o", 0.6},    // (group, model) without a group default
		{"svip", "claude", 1},      // neither: 1.0
		{"default", "gpt-4o", 1},   // the seeded default
		{"unknown", "gpt-4o", 1},   // unknown group
		{"", "", 1},                // nothing
		{"VIP", "gpt-4o", 1},       // group names are case-sensitive
		{"vip", "GPT-4O", 0.8},     // so are model names
		{"svip", "gpt-4o-mini", 1}, // no prefix matching
		{"vip", "gpt-4o ", 0.8},    // no trimming
		{"broken", "m", 1},         // invalid rows (0, NaN) are skipped
		{"broken", "other", 1},     // a discount of 0 is not a default
	}
	for _, tt := range tests {
		if got := Discount(prices, tt.group, tt.model); got != tt.want {
			t.Errorf("Discount(%q, %q) = %v, want %v", tt.group, tt.model, got, tt.want)
		}
	}
	// The model entry wins whether it comes before or after the default.
	reversed := []GroupPrice{prices[2], prices[1]}
	if got := Discount(reversed, "vip", "gpt-4o"); got != 0.5 {
		t.Errorf("reversed rows: Discount = %v, want 0.5", got)
	}
	if got := Discount(nil, "vip", "gpt-4o"); got != 1 {
		t.Errorf("no rows: Discount = %v, want 1", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"price 0", ValidatePrice(0), ""},
		{"price positive", ValidatePrice(12.5), ""},
		{"price negative", ValidatePrice(-0.01), MsgPriceInvalid},
		{"price NaN", ValidatePrice(math.NaN()), MsgPriceInvalid},
		{"price +Inf", ValidatePrice(math.Inf(1)), MsgPriceInvalid},
		{"price max", ValidatePrice(MaxPrice), ""},
		{"price above max", ValidatePrice(MaxPrice + 0.01), MsgPriceInvalid},
		{"price 1e308", ValidatePrice(1e308), MsgPriceInvalid},
		{"billing token", ValidateBillingType("token"), ""},
		{"billing per_request", ValidateBillingType("per_request"), ""},
		{"billing empty", ValidateBillingType(""), MsgBillingType},
		{"billing other", ValidateBillingType("Token"), MsgBillingType},
		{"discount 1", ValidateDiscount(1), ""},
		{"discount 10", ValidateDiscount(10), ""},
		{"discount small", ValidateDiscount(0.01), ""},
		{"discount 0", ValidateDiscount(0), MsgDiscountInvalid},
		{"discount negative", ValidateDiscount(-1), MsgDiscountInvalid},
		{"discount above 10", ValidateDiscount(10.01), MsgDiscountInvalid},
		{"discount NaN", ValidateDiscount(math.NaN()), MsgDiscountInvalid},
		{"discount Inf", ValidateDiscount(math.Inf(1)), MsgDiscountInvalid},
		{"model empty", ValidateModelName(""), MsgModelNameEmpty},
		{"model ok", ValidateModelName("gpt-4o"), ""},
		{"model 191 runes", ValidateModelName(strings.Repeat("模", 191)), ""},
		{"model too long", ValidateModelName(strings.Repeat("模", 192)), MsgModelNameLength},
		{"model NUL", ValidateModelName("gpt\x00"), "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"model newline", ValidateModelName("gpt\n4"), "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"group empty", ValidateGroupName(""), MsgGroupNameEmpty},
		{"group ok", ValidateGroupName("vip"), ""},
		{"group too long", ValidateGroupName("abcdefghijklmnopqrstuvwxyz0123456"), MsgGroupNameLength},
		{"group model empty", ValidateGroupModel(""), ""},
		{"group model too long", ValidateGroupModel(strings.Repeat("模", 192)), MsgModelNameLength},
		{"group NUL", ValidateGroupName("vip\x00"), "分组名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"group model NUL", ValidateGroupModel("\x00"), "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
