package pricing

import "math"

// Unbounded is what CompletionAffordable answers when the completion length
// does not change the cost (per-request prices, a free output price).
const Unbounded = math.MaxInt64

// CompletionAffordable is the largest completion, in tokens, that amount
// pays for after a prompt of promptTokens: the largest n with
// Quota(p, {promptTokens, n}, discount) <= amount, or 0 when none is
// (callers that need at least one token check for >= 1). It is Unbounded
// when the completion is free (per-request billing, an output price of 0)
// and the rest fits.
func CompletionAffordable(p Price, promptTokens, amount int64, discount float64) int64 {
	if Quota(p, Usage{PromptTokens: promptTokens}, discount) > amount {
		return 0
	}
	perToken := p.OutputPrice * discount
	if p.BillingType == BillingPerRequest || !(perToken > 0) {
		return Unbounded
	}
	prompt := p.InputPrice * float64(max(promptTokens, 0)) * discount
	// Quota rounds half up, so a cost below amount + 0.5 rounds to at most
	// amount; the float guess is then corrected against Quota itself.
	guess := math.Floor((float64(amount) + 0.5 - prompt) / perToken)
	n := int64(max(0, min(guess, 1<<53)))
	fits := func(n int64) bool {
		return Quota(p, Usage{PromptTokens: promptTokens, CompletionTokens: n}, discount) <= amount
	}
	// The guess is off by float rounding only: a few steps at most.
	for i := 0; i < 8 && n > 0 && !fits(n); i++ {
		n--
	}
	for i := 0; i < 8 && fits(n+1); i++ {
		n++
	}
	for n > 0 && !fits(n) { // never more than the steps above left over
		n /= 2
	}
	return n
}
