package billing

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Plans pays for calls from subscriptions: it reserves usage counters (one
// request and the call's estimated tokens) against the limits of the
// subscription the call names (Call.SubscriptionID, Call.Rule) instead of
// money, and settles the real count. The relay tries the caller's
// subscriptions in order and the balance last (docs/architecture.md,
// Money: who pays); a refusal is a *store.UsageLimitError naming the
// binding limit.
//
// On SQLite (Local) the counters live in memory (usageBook) and only each
// call's real use is written; on the shared server databases each node
// serves calls from slices of the limits it counted in the database
// (usageSlices), so nodes sharing the database never serve more than a
// limit together. Either way the use is written in the ledger's group
// commit with the consume log, exactly once.
type Plans struct {
	ledger *Ledger
	store  *store.Store
	book   *usageBook   // SQLite
	slices *usageSlices // shared server databases
	now    func() time.Time
}

// releaseTimeout bounds the release of a failed call's usage on a server
// database before it is left to the ledger.
const releaseTimeout = 2 * time.Second

// NewPlans is the subscription payer over ledger; local as in Config.Local.
// now is the clock of the limit windows (nil: time.Now).
func NewPlans(l *Ledger, st *store.Store, local bool, now func() time.Time) *Plans {
	p := &Plans{ledger: l, store: st, now: now}
	if p.now == nil {
		p.now = time.Now
	}
	if local {
		p.book = newUsageBook()
		// A peer's plan usage (cluster mode) lands in the database behind
		// the book's back: the book counts it too.
		st.OnCommit(p.book.changed)
	} else if l.slices != nil { // the ledger gives usage slices back with its own
		p.slices = newUsageSlices(st, l)
		l.attach(p.slices)
	}
	return p
}

// Reserve counts the call against the subscription's limits of its model:
// one request and the tokens planHold gives it. A call whose completion
// is open holds between the least completion and its default one, as much
// as the tightest token limit leaves after the prompt, and its completion
// limit upstream is exactly what it holds: parallel calls never write
// past the window together.
func (p *Plans) Reserve(ctx context.Context, c *Call) (Charge, error) {
	most, least := planHold(c)
	op := store.UsageOp{SubscriptionID: c.SubscriptionID, Model: c.Model, Rule: c.Rule,
		Tokens: most, MinTokens: least, Now: p.now()}
	var r store.UsageReservation
	var err error
	var slice *usageSlice
	switch {
	case p.book != nil:
		r, err = p.book.reserve(ctx, p.store, op)
	case p.slices != nil:
		r, slice, err = p.slices.reserve(ctx, op, c.UserID)
	default:
		r, err = p.store.ReserveUsage(ctx, op)
	}
	if err != nil {
		return Charge{}, err
	}
	ch := Charge{Payer: p, Usage: r, usage: slice}
	// Without a token limit nothing needs the bound: the completion stays
	// the client's (open), as on the balance without strict billing.
	if r.Decision.Tokens != nil && opensCompletion(c) {
		ch.CompletionLimit = PlanCompletionLimit(c, r.Tokens)
	}
	if opensCompletion(c) {
		coverOutput(c, &ch)
	}
	return ch, nil
}

// Settle counts the real tokens in place of the estimate and writes the
// consume log: billing_source 1, the plan, and as quota what the call
// would have cost at balance prices (reports); the balance is untouched.
// A call that billed nothing gives its reservation back.
func (p *Plans) Settle(c *Call, ch *Charge, o Outcome) {
	r := ch.Usage
	u := &store.UsageSettle{HoldKey: r.Key, SubscriptionID: r.SubscriptionID, Model: r.Model, BucketStart: r.BucketStart}
	if o.ChannelID == 0 {
		if ch.usage != nil {
			p.slices.released(ch.usage, r.Tokens, p.now())
			return
		}
		if p.book != nil {
			p.book.release(r) // nothing was written
			return
		}
		// Given back at once, not in the next group commit: a client that
		// retries a failed call at once must not find its own failure
		// still counted. A release that fails here goes to the ledger,
		// which retries it; the hold row makes it apply once.
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		_, err := p.store.ReleaseUsage(ctx, r)
		cancel()
		if err != nil {
			u.Release = true
			p.ledger.Settle(store.SettleOp{UserID: c.UserID, Usage: u})
		}
		return
	}
	u.Tokens = clampCount(o.Usage.PromptTokens + o.Usage.CompletionTokens)
	if p.book != nil {
		p.book.settle(r, u.Tokens)
	}
	if ch.usage != nil {
		p.slices.settled(ch.usage, r.Tokens, u.Tokens, p.now())
		u.Slice = true
	}
	ch.Cost = pricing.Quota(c.Price, o.Usage, c.Discount)
	log := ConsumeLog(c, o, ch.Cost, 0)
	log.BillingSource, log.PlanID = store.BillingSourcePlan, c.PlanID
	// TokenID without TokenLimited: the key's accessed time moves, its
	// quota does not (a plan-billed call spends no money).
	p.ledger.Settle(store.SettleOp{UserID: c.UserID, TokenID: c.TokenID, ChannelID: o.ChannelID,
		Key: settleKey(), Log: log, Usage: u})
}

// Forget drops the in-memory counters idle for longer than idle (SQLite);
// the janitor calls it. It returns how many it dropped.
func (p *Plans) Forget(idle time.Duration) int {
	if p.book == nil {
		return 0
	}
	return p.book.forget(p.now(), idle)
}

// planHold is the tokens a call holds on a plan (docs/decisions/
// plan-limits.md, "Token holds"): most, and least when it may hold less
// (0: it holds exactly most), within the counters' range.
//   - An embedding: its prompt bound.
//   - A call with its own max_tokens: the prompt bound plus max_tokens for
//     every choice; no DefaultCompletionSize floor, since the upstream
//     stops at max_tokens, and a small window must serve small calls.
//   - An open completion the relay can bound: the prompt bound plus, per
//     choice, the model's output limit (Call.OutputLimit) or else
//     DefaultCompletionSize at most, the least completion (1 token, 16 on
//     the Responses API) at least; the counters take as much as the
//     tightest token limit leaves.
//   - Anything else (uploads, media): the balance's estimate
//     (EstimateTokens); the upstream cannot be bounded, the settlement
//     counts what it used.
func planHold(c *Call) (most, least int64) {
	prompt := min(c.PromptBound, planlimit.MaxAmount)
	completion := func(perChoice int64) int64 { return min(TimesChoices(perChoice, c.Choices), planlimit.MaxAmount) }
	switch {
	case c.Kind == KindEmbeddings:
		return clampCount(prompt), 0
	case c.MaxTokens > 0 && (c.Kind == KindChat || c.Kind == KindResponses):
		return clampCount(prompt + completion(c.MaxTokens)), 0
	case opensCompletion(c):
		floor := leastCompletion(c)
		open := c.DefaultMaxTokens
		if c.OutputLimit > 0 {
			open = c.OutputLimit
		}
		open = min(max(open, floor), MaxCompletionSent)
		return clampCount(prompt + completion(open)), clampCount(prompt + completion(floor))
	}
	u := EstimateTokens(c)
	return clampCount(prompt + min(u.CompletionTokens, planlimit.MaxAmount)), 0
}

// opensCompletion reports whether the client left the completion open on
// an endpoint where the relay can bound it (chat, completions, Messages,
// Responses; not an upload).
func opensCompletion(c *Call) bool {
	return c.MaxTokens <= 0 && !c.Multipart && (c.Kind == KindChat || c.Kind == KindResponses)
}

// leastCompletion is the least completion limit per choice the relay
// sends: one token, MinResponsesOutput on the Responses API.
func leastCompletion(c *Call) int64 {
	if c.Kind == KindResponses {
		return MinResponsesOutput
	}
	return 1
}

// PlanCompletionLimit is the completion limit per choice a hold of held
// tokens buys after the prompt's bound: never below the least completion
// (the hold was taken for at least that), never above MaxCompletionSent.
func PlanCompletionLimit(c *Call, held int64) int64 {
	n := (held - c.PromptBound) / max(c.Choices, 1)
	return min(max(n, leastCompletion(c)), MaxCompletionSent)
}
