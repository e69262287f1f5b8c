package billing

import (
	"math"

	"github.com/modelgate/modelgate/internal/pricing"
)

// The pure rules of a call's reservation and cost (docs/architecture.md,
// Money; docs/decisions/relay-billing.md). Every payer uses them: the
// balance prices them, a subscription counts the same tokens.

const (
	// MaxCompletionSent is the largest completion limit sent upstream: what
	// an upstream's limit field holds.
	MaxCompletionSent = math.MaxInt32
	// MinResponsesOutput is the least max_output_tokens the Responses API
	// accepts: a hold that buys fewer is refused here, not upstream.
	MinResponsesOutput = 16
)

// EstimateTokens is the call's estimated usage: the prompt's bound plus the
// requested completion size for every choice — for an open completion the
// model's output limit (OutputLimit) when known, else DefaultMaxTokens —
// but never less than DefaultMaxTokens each (nor more than the model's
// limit, when that is smaller). The floor matters because a small
// max_tokens bounds only the answer: a tiny body can carry a costly prompt
// (an image URL, a cached context), and 50 parallel calls each holding a
// tiny estimate would drain a small balance at once. Embeddings have no
// completion.
func EstimateTokens(c *Call) pricing.Usage {
	floor := c.DefaultMaxTokens
	if c.OutputLimit > 0 {
		floor = min(floor, c.OutputLimit)
		if c.MaxTokens <= 0 {
			floor = c.OutputLimit // the global default applies only to models without a value
		}
	}
	completion := TimesChoices(max(c.MaxTokens, floor), c.Choices)
	if c.Kind == KindEmbeddings {
		completion = 0
	}
	return pricing.Usage{PromptTokens: c.PromptBound, CompletionTokens: completion}
}

// Estimate is the estimated usage priced at the call's bound price
// (holdPrice).
func Estimate(c *Call) int64 {
	return pricing.Quota(holdPrice(c), EstimateTokens(c), c.Discount)
}

// holdPrice is the price reservations use: every prompt token at the
// dearest prompt price (input, cache read or cache write) of any tier the
// prompt bound can reach (pricing.Price.Bound), so the upstream's split of
// the prompt can never make the settled cost exceed what was held.
func holdPrice(c *Call) pricing.Price {
	return c.Price.Bound(c.PromptBound)
}

// CapsCompletion reports whether the call's cost depends on a completion
// length the client left open and the relay can bound upstream: a
// token-priced chat, completion, Responses or Messages call without a limit.
func CapsCompletion(c *Call) bool {
	return c.Price.BillingType != pricing.BillingPerRequest && c.MaxTokens <= 0 && !c.Multipart &&
		(c.Kind == KindChat || c.Kind == KindResponses)
}

// LeastHold is the least a strict reservation must hold (store.ReserveOp
// Min): the most the call can cost when the request bounds it (a
// per-request price, an embedding, a completion limit), else the prompt
// plus one completion token when the relay caps the completion. Other calls
// (token-priced images and audio, counted locally) keep the old rule: any
// positive balance, the settlement cap bounds them.
func LeastHold(c *Call) int64 {
	price, prompt := holdPrice(c), c.PromptBound
	switch {
	case price.BillingType == pricing.BillingPerRequest:
		return pricing.Quota(price, pricing.Usage{}, c.Discount)
	case c.Kind == KindEmbeddings:
		return pricing.Quota(price, pricing.Usage{PromptTokens: prompt}, c.Discount)
	case c.MaxTokens > 0 && (c.Kind == KindChat || c.Kind == KindResponses):
		completion := TimesChoices(c.MaxTokens, c.Choices)
		return pricing.Quota(price, pricing.Usage{PromptTokens: prompt, CompletionTokens: completion}, c.Discount)
	case CapsCompletion(c):
		return pricing.Quota(price, pricing.Usage{PromptTokens: prompt, CompletionTokens: max(c.Choices, 1)}, c.Discount)
	}
	return 0
}

// CompletionLimit is the completion limit a hold of amount buys after the
// prompt bound, per choice (n completions share it): 0 when the completion
// needs no limit (it is free), -1 when the hold does not buy one token each
// (MinResponsesOutput on the Responses API).
func CompletionLimit(c *Call, amount int64) int64 {
	n := pricing.CompletionAffordable(holdPrice(c), c.PromptBound, amount, c.Discount)
	if n == pricing.Unbounded {
		return 0
	}
	least := int64(1)
	if c.Kind == KindResponses {
		least = MinResponsesOutput
	}
	if n /= max(c.Choices, 1); n < least {
		return -1
	}
	return min(n, MaxCompletionSent)
}

// Cost is what a call that used u is charged against a hold of held, and
// what it was not charged: under strict billing never more than the hold
// (the prompt cost more than its bound, media behind a URL, or the upstream
// ignored the limit), the rest uncollected.
func Cost(c *Call, u pricing.Usage, held int64) (cost, uncollected int64) {
	cost = pricing.Quota(c.Price, u, c.Discount)
	if c.Strict && cost > held {
		return held, cost - held
	}
	return cost, 0
}

// TimesChoices is tokens for each of choices completions, saturating: a
// limit too large to pay for is then refused, never wrapped around.
func TimesChoices(tokens, choices int64) int64 {
	choices = max(choices, 1)
	if tokens > math.MaxInt64/choices {
		return math.MaxInt64
	}
	return tokens * choices
}
