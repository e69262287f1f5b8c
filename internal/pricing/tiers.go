package pricing

// Context-length tiers and cache-write prices (issue 13 §3,
// docs/decisions/pricing-cache-tiers.md).

// Limits of tiers: a handful is what providers publish (one step at 128k or
// 200k tokens), and a threshold above 1e8 tokens is no context window.
const (
	MaxTiers     = 8
	MaxTierAbove = 100_000_000
)

// Validation messages of tiers.
const (
	MsgTiersTooMany = "上下文分档最多 8 个"
	MsgTierAbove    = "分档起点 above_prompt_tokens 必须是 1 到 100000000 之间的整数"
	MsgTierOrder    = "分档起点 above_prompt_tokens 必须从小到大排列且不能重复"
	MsgTierPrice    = "分档价格必须是 0 到 1000000 之间的有限数"
)

// Tier holds the token prices of calls whose whole prompt (uncached input,
// cache reads and cache writes) has more than Above tokens. Its cache prices
// of 0 mean its own input price.
type Tier struct {
	Above             int64
	InputPrice        float64
	OutputPrice       float64
	CachedPrice       float64
	CacheWritePrice   float64
	CacheWrite1hPrice float64
}

// TokenPrices is the tier a call with a prompt of promptTokens is billed
// at: the last tier whose Above the prompt exceeds, else the base prices
// (Above 0). The tier applies to every part of the call, output included,
// as providers bill long contexts. Cache prices of 0 come back as the
// tier's input price, so the answer is the prices applied.
func (p Price) TokenPrices(promptTokens int64) Tier {
	t := Tier{InputPrice: p.InputPrice, OutputPrice: p.OutputPrice, CachedPrice: p.CachedPrice,
		CacheWritePrice: p.CacheWritePrice, CacheWrite1hPrice: p.CacheWrite1hPrice}
	for _, tier := range p.Tiers {
		if promptTokens > tier.Above {
			t = tier
		}
	}
	return t.effective()
}

// effective replaces cache prices of 0 with the input price.
func (t Tier) effective() Tier {
	if t.CachedPrice == 0 {
		t.CachedPrice = t.InputPrice
	}
	if t.CacheWritePrice == 0 {
		t.CacheWritePrice = t.InputPrice
	}
	if t.CacheWrite1hPrice == 0 {
		t.CacheWrite1hPrice = t.InputPrice
	}
	return t
}

// Bound is a flat price (no tiers, no cache prices) that costs at least as
// much as p for any call whose prompt has at most promptBound tokens,
// however the upstream splits it into input, cache reads and cache writes:
// every prompt token at the dearest prompt price, and the output at the
// dearest output price, of the tiers such a prompt can reach. Reservations
// price their estimate with it, so the hold covers the settled cost (a
// cache write can cost twice the input price). Per-request prices are
// returned as they are.
func (p Price) Bound(promptBound int64) Price {
	if p.BillingType == BillingPerRequest {
		return p
	}
	out := Price{BillingType: p.BillingType, PerRequestPrice: p.PerRequestPrice}
	add := func(t Tier) {
		t = t.effective()
		out.InputPrice = max(out.InputPrice, t.InputPrice, t.CachedPrice, t.CacheWritePrice, t.CacheWrite1hPrice)
		out.OutputPrice = max(out.OutputPrice, t.OutputPrice)
	}
	add(Tier{InputPrice: p.InputPrice, OutputPrice: p.OutputPrice, CachedPrice: p.CachedPrice,
		CacheWritePrice: p.CacheWritePrice, CacheWrite1hPrice: p.CacheWrite1hPrice})
	for _, t := range p.Tiers {
		if promptBound > t.Above {
			add(t)
		}
	}
	return out
}

// ValidateTiers checks a model's tiers: at most MaxTiers, each Above from 1
// to MaxTierAbove and strictly ascending (so the tier of a prompt is never
// ambiguous), each price as ValidatePrice wants it.
func ValidateTiers(tiers []Tier) string {
	if len(tiers) > MaxTiers {
		return MsgTiersTooMany
	}
	for i, t := range tiers {
		if t.Above < 1 || t.Above > MaxTierAbove {
			return MsgTierAbove
		}
		if i > 0 && t.Above <= tiers[i-1].Above {
			return MsgTierOrder
		}
		for _, v := range []float64{t.InputPrice, t.OutputPrice, t.CachedPrice, t.CacheWritePrice, t.CacheWrite1hPrice} {
			if ValidatePrice(v) != "" {
				return MsgTierPrice
			}
		}
	}
	return ""
}
