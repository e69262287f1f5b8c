// Package pricing holds the rules of model prices and group discounts: what
// a valid price or discount is, and how much quota a call costs
// (docs/architecture.md, Money). It is pure: the store keeps the rows, the
// relay feeds them in here.
package pricing

import (
	"math"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/textfield"
)

// Billing types of a model price.
const (
	BillingToken      = "token"
	BillingPerRequest = "per_request"
)

// QuotaPerUnit is the quota of 1 CNY: quota is integer micro-yuan.
const QuotaPerUnit = 1_000_000

// MaxDiscount bounds a group discount. A multiplier above 10 is almost
// certainly a typo (8 for 0.8) that would bill users ten times over.
const MaxDiscount = 10

// Limits of names: a model name as its column allows, a group name as a
// user's group may be (user.ValidateGroup).
const (
	MaxModelNameLength = 191
	MaxGroupNameLength = 32
)

// Validation messages.
const (
	MsgModelNameEmpty  = "模型名称不能为空" // spec: Errors
	MsgModelNameLength = "模型名称不能超过 191 个字符"
	MsgGroupNameEmpty  = "分组名称不能为空" // spec: Errors
	MsgGroupNameLength = "分组名称不能超过 32 个字符"
	MsgPriceInvalid    = "价格必须是 0 到 1000000 之间的有限数"
	MsgBillingType     = "计费类型只能是 token 或 per_request"
	MsgDiscountInvalid = "折扣必须大于 0 且不超过 10"
	MsgOutputLimit     = "最大输出 token 数必须是 0 到 10000000 之间的整数"
)

// Price is what a call of one model costs: CNY per million tokens for token
// billing, CNY per call for per-request billing. A cache price of 0 bills
// those tokens at the input price. Tiers, ascending by Above, replace the
// token prices for calls with a larger prompt (TokenPrices).
type Price struct {
	InputPrice        float64
	OutputPrice       float64
	CachedPrice       float64 // cache reads; 0: the input price
	CacheWritePrice   float64 // 5-minute cache writes; 0: the input price
	CacheWrite1hPrice float64 // 1-hour cache writes; 0: the input price
	PerRequestPrice   float64
	BillingType       string
	Tiers             []Tier
	// MaxOutputTokens is the most the model writes in one completion (0:
	// unknown): an open call is held for it (docs/decisions/relay-billing.md).
	MaxOutputTokens int64
}

// Usage is what one call consumed. PromptTokens is the whole prompt: the
// uncached input, the cache reads (CachedTokens) and the cache writes
// (CacheWriteTokens for 5 minutes, CacheWrite1hTokens for 1 hour), each
// part billed once at its own price (docs/decisions/pricing-cache-tiers.md).
type Usage struct {
	PromptTokens       int64
	CompletionTokens   int64
	CachedTokens       int64
	CacheWriteTokens   int64
	CacheWrite1hTokens int64
}

// used reports whether the call consumed anything billable.
func (u Usage) used() bool {
	return u.PromptTokens > 0 || u.CompletionTokens > 0 || u.CachedTokens > 0 ||
		u.CacheWriteTokens > 0 || u.CacheWrite1hTokens > 0
}

// parts splits the prompt into its uncached input, cache reads and cache
// writes, so that they add up to the prompt: negative counts are 0, and a
// part larger than what the prompt has left is capped (a provider cannot
// cache more than it was sent), in the order reads, 5-minute writes,
// 1-hour writes.
func (u Usage) parts() (input, cached, write, write1h int64) {
	prompt := max(u.PromptTokens, 0)
	cached = min(max(u.CachedTokens, 0), prompt)
	write = min(max(u.CacheWriteTokens, 0), prompt-cached)
	write1h = min(max(u.CacheWrite1hTokens, 0), prompt-cached-write)
	return prompt - cached - write - write1h, cached, write, write1h
}

// Quota is the cost of a call in quota (docs/architecture.md, Money):
//
//	token:       round((input×uncached + cached_price×cached + cache_write_price×written_5m
//	                    + cache_write_1h_price×written_1h + output×completion) × discount)
//	per_request: round(per_request_price × 1e6 × discount)
//
// with the prices of the tier the whole prompt falls in (TokenPrices), and
// a cache price of 0 meaning the input price. Cached tokens beyond the prompt
// count as prompt tokens only (Usage.parts), and negative counts as 0. A
// call that used anything costs at least 1, so no rounding makes a call
// free; a per-request call is always a use. The result never overflows: it
// saturates at MaxCallCost.
func Quota(p Price, u Usage, discount float64) int64 {
	if p.BillingType == BillingPerRequest {
		return atLeastOne(p.PerRequestPrice * QuotaPerUnit * discount)
	}
	if !u.used() {
		return 0
	}
	t := p.TokenPrices(u.PromptTokens)
	input, cached, write, write1h := u.parts()
	completion := max(u.CompletionTokens, 0)
	// Prices are CNY per million tokens and quota is micro-yuan, so
	// tokens × price is already quota: no scaling.
	micro := t.InputPrice*float64(input) + t.CachedPrice*float64(cached) +
		t.CacheWritePrice*float64(write) + t.CacheWrite1hPrice*float64(write1h) +
		t.OutputPrice*float64(completion)
	return atLeastOne(micro * discount)
}

// atLeastOne rounds a cost to whole quota, at least 1 and at most
// MaxCallCost. NaN (only from prices that validation refuses) also gives 1
// rather than an undefined conversion.
func atLeastOne(v float64) int64 {
	v = math.Round(v)
	switch {
	case !(v >= 1): // also NaN
		return 1
	case v >= float64(MaxCallCost):
		return MaxCallCost
	}
	return int64(v)
}

// GroupPrice is a discount of a group for one model, or for every model of
// the group when Model is empty.
type GroupPrice struct {
	Group    string
	Model    string
	Discount float64
}

// Discount is the multiplier of group for model: the (group, model) entry,
// else the group's default (group, ""), else 1.0. Entries with a discount
// that is not valid are skipped, so a bad row can never make calls free.
func Discount(prices []GroupPrice, group, model string) float64 {
	def := 1.0
	for _, gp := range prices {
		if gp.Group != group || ValidateDiscount(gp.Discount) != "" {
			continue
		}
		if gp.Model == model && model != "" {
			return gp.Discount
		}
		if gp.Model == "" {
			def = gp.Discount
		}
	}
	return def
}

// ValidatePrice checks one price: finite, not negative, at most MaxPrice.
func ValidatePrice(v float64) string {
	if !(v >= 0 && v <= MaxPrice) { // also refuses NaN and the infinities

		return MsgPriceInvalid
	}
	return ""
}

// MaxOutputLimit bounds a model's max_output_tokens (the range of the
// DefaultCompletionSize option).
const MaxOutputLimit = 10_000_000

// ValidateOutputLimit checks a model's max_output_tokens: 0 (unknown) to
// MaxOutputLimit.
func ValidateOutputLimit(n int64) string {
	if n < 0 || n > MaxOutputLimit {
		return MsgOutputLimit
	}
	return ""
}

// ValidateBillingType checks a billing type.
func ValidateBillingType(t string) string {
	if t != BillingToken && t != BillingPerRequest {
		return MsgBillingType
	}
	return ""
}

// ValidateDiscount checks a group discount: above 0 and at most MaxDiscount.
func ValidateDiscount(d float64) string {
	if !(d > 0 && d <= MaxDiscount) { // also refuses NaN
		return MsgDiscountInvalid
	}
	return ""
}

// Text rules of the stored names (columns: store.ModelPrice, GroupPrice).
var (
	modelNameText = textfield.Field{Label: "模型名称", MaxChars: MaxModelNameLength}
	groupNameText = textfield.Field{Label: "分组名称", MaxChars: 64}
)

// ValidateModelName checks the model name of a model price (required).
func ValidateModelName(name string) string {
	switch {
	case name == "":
		return MsgModelNameEmpty
	case utf8.RuneCountInString(name) > MaxModelNameLength:
		return MsgModelNameLength
	}
	return modelNameText.Validate(name)
}

// ValidateGroupName checks the group of a group price (required).
func ValidateGroupName(name string) string {
	switch {
	case name == "":
		return MsgGroupNameEmpty
	case utf8.RuneCountInString(name) > MaxGroupNameLength:
		return MsgGroupNameLength
	}
	return groupNameText.Validate(name)
}

// ValidateGroupModel checks the model of a group price: empty is the
// group's default.
func ValidateGroupModel(name string) string {
	if utf8.RuneCountInString(name) > MaxModelNameLength {
		return MsgModelNameLength
	}
	return modelNameText.Validate(name)
}
