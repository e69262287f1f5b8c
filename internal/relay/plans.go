package relay

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// Plan billing in the relay (docs/decisions/plans.md, "Plan billing"): who
// pays for a call, plan rules 1 and 2, the 429 of a reached limit and the
// rate-limit headers.

// Messages of plan billing; %s are the model, the plan's name, a limit's
// name and when it frees up.
const (
	msgModelNotInPlanFmt = "模型 %s 不在套餐 %s 的可用模型中"
	msgPlanLimitFmt      = "套餐 %s 的模型 %s 已达到限额 %s(%d/%d),将于 %s 恢复"
	msgPlanLifetimeFmt   = "套餐 %s 的总 tokens 额度已用尽(%d/%d)"
)

// Codes of plan billing: a model no subscription serves (rule 2), a
// rolling limit reached (OpenAI's rate-limit code; the error type is the
// measure, "requests" or "tokens", as OpenAI writes it).
const (
	codeModelNotInPlan = "model_not_in_plan"
	codeRateLimit      = "rate_limit_exceeded"
)

// subscription is an active subscription as the relay bills it, cached
// with the key (keycache.go).
type subscription struct {
	id, planID int64
	end        int64 // unix seconds: it pays until then
	plan       plan.Plan
}

// loadSubscriptions reads user's subscriptions active at now with their
// plans, earliest end first. A subscription whose plan is gone or whose
// stored limits do not parse pays for nothing.
func loadSubscriptions(ctx context.Context, st *store.Store, userID int64, now time.Time) ([]subscription, error) {
	rows, err := st.ActiveUserPlans(ctx, userID, now.Unix())
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.PlanID)
	}
	plans, err := st.PlansByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	subs := make([]subscription, 0, len(rows))
	for _, r := range rows {
		p, ok := plans[r.PlanID]
		if !ok {
			continue
		}
		limits, problem := plan.ParseLimits(p.ModelLimits)
		if problem != nil {
			continue
		}
		subs = append(subs, subscription{id: r.ID, planID: r.PlanID, end: r.EndTime,
			plan: plan.Plan{Name: p.Name, Tokens: p.Tokens, Limits: limits, DefaultModel: p.DefaultModel}})
	}
	return subs, nil
}

// hasSubscription reports whether the caller holds a subscription active
// now: its calls are then not refused for an empty balance before the body
// is read (a subscription may pay).
func (c *call) hasSubscription() bool {
	now := c.rl.now().Unix()
	for i := range c.key.subs {
		if c.key.subs[i].end > now {
			return true
		}
	}
	return false
}

// pay is the hold phase: it finds who pays for the call and reserves it
// (docs/architecture.md,
// Money: who pays). A caller without an active subscription pays from the
// balance. Otherwise the subscriptions are tried earliest end first: each
// whose plan serves the model (rule 1 rewrites it to default_model) and
// has the model's price and a channel reserves usage against its limits;
// one that has reached a limit passes the call on. Then the balance pays,
// for the model as requested. When no active subscription serves the
// model at all (rule 2) the answer is 422 and the balance is not tried;
// when the balance cannot pay either, the first subscription's refusal is
// the answer: 429 naming its binding limit and when it frees up. It
// returns the model the call is served as and its route, and fills p
// (the call's own, so the description the payer is given a pointer to
// needs no allocation of its own); on a refusal p is left empty.
func (c *call) pay(p *payment) (string, routing, error) {
	model, rt, err := c.payers(p)
	if err != nil {
		*p = payment{}
	}
	return model, rt, err
}

// payers is pay's search of a payer.
func (c *call) payers(p *payment) (string, routing, error) {
	requested, now := c.meta.model, c.rl.now().Unix()
	var first *subscription // the first active subscription: rule 2 names its plan
	var refusal error       // the first refusal of a subscription that serves the model
	for i := range c.key.subs {
		s := &c.key.subs[i]
		if s.end <= now {
			continue
		}
		if first == nil {
			first = s
		}
		model, ok := s.plan.Serve(requested)
		if !ok {
			continue
		}
		rt, err := c.route(model)
		if err == nil {
			c.describe(model, &p.bill)
			p.bill.SubscriptionID, p.bill.PlanID = s.id, s.planID
			p.bill.Rule = s.plan.Limits[model].Counted(s.plan.Tokens)
			if p.charge, err = c.reserve(c.rl.plans, &p.bill); err == nil {
				return model, rt, nil
			}
			var limit *store.UsageLimitError
			if !errors.As(err, &limit) {
				return "", routing{}, err // the database failed: no other payer is tried
			}
			err = planLimitReached(s, model, limit.Limit, c.rl.now())
		}
		if refusal == nil {
			refusal = err
		}
	}
	if first != nil && refusal == nil {
		return "", routing{}, errf(http.StatusUnprocessableEntity, "invalid_request_error", codeModelNotInPlan,
			msgModelNotInPlanFmt, requested, first.plan.Name)
	}
	rt, err := c.route(requested)
	if err == nil {
		c.describe(requested, &p.bill)
		p.charge, err = c.reserve(&c.rl.balance, &p.bill)
	}
	if err != nil && refusal != nil {
		return "", routing{}, refusal // nothing can pay: the subscription's reason is the one to fix
	}
	if err != nil {
		return "", routing{}, err
	}
	return requested, rt, nil
}

// planLimitReached is the 429 of a subscription whose limit l refuses the
// call: a rolling limit is OpenAI's rate-limit error with the reset in the
// message and in Retry-After; the lifetime allowance never frees, so it is
// insufficient_quota. Clients are told not to retry when the limit frees
// later than their SDK's backoff would wait (a minute).
func planLimitReached(s *subscription, model string, l planlimit.Status, now time.Time) *apiError {
	if l.Lifetime {
		e := errf(http.StatusTooManyRequests, codeInsufficientQuota, codeInsufficientQuota,
			msgPlanLifetimeFmt, s.plan.Name, l.Used, l.Limit)
		e.header = rateLimitHeader(nil, l, now)
		return e
	}
	typ := "requests"
	if l.Measure == planlimit.Tokens {
		typ = "tokens"
	}
	e := errf(http.StatusTooManyRequests, typ, codeRateLimit, msgPlanLimitFmt,
		s.plan.Name, model, l.Name, l.Used, l.Limit, l.Reset.UTC().Format(time.RFC3339))
	wait := l.Reset.Sub(now)
	e.header = rateLimitHeader(nil, l, now)
	e.header.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(max(wait, time.Second).Seconds())), 10))
	if wait > time.Minute {
		e.header.Set("X-Should-Retry", "false")
	}
	return e
}

// setRateLimitHeaders puts OpenAI's rate-limit headers of a plan-billed
// call on the response: the tightest request limit and the tightest token
// limit of the subscription's model, counting this call.
func (c *call) setRateLimitHeaders() {
	d := c.charge.Usage.Decision
	h := c.w.Header()
	now := c.rl.now()
	if d.Requests != nil {
		rateLimitHeader(h, *d.Requests, now)
	}
	if d.Tokens != nil {
		rateLimitHeader(h, *d.Tokens, now)
	}
}

// rateLimitHeader sets on h (a new header when nil) the x-ratelimit-limit,
// -remaining and -reset headers of l's measure. The reset is a duration
// as OpenAI writes it ("1s", "6m0s"); the lifetime allowance, which never
// resets, has none. The keys are written canonical, as http.Header.Set
// would, without canonicalising them on every call.
func rateLimitHeader(h http.Header, l planlimit.Status, now time.Time) http.Header {
	if h == nil {
		h = http.Header{}
	}
	keys := &rateLimitKeys[0]
	if l.Measure == planlimit.Tokens {
		keys = &rateLimitKeys[1]
	}
	h[keys[0]] = []string{strconv.FormatInt(l.Limit, 10)}
	h[keys[1]] = []string{strconv.FormatInt(l.Remaining, 10)}
	if !l.Lifetime && !l.Reset.IsZero() {
		h[keys[2]] = []string{resetText(l.Reset.Sub(now))}
	}
	return h
}

// rateLimitKeys are OpenAI's rate-limit headers, limit, remaining and
// reset, of requests and of tokens.
var rateLimitKeys = [2][3]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
}

// resetText writes d as OpenAI's reset headers do.
func resetText(d time.Duration) string {
	if d < time.Second {
		return max(d, 0).Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// billedByPlan reports whether a subscription pays for the call: its
// rate-limit headers are then the relay's, not the channel's.
func (c *call) billedByPlan() bool {
	return c.charge.Payer != nil && c.charge.Payer == billing.Payer(c.rl.plans)
}

// ForgetIdlePlanUsage drops the plan usage counters held in memory
// (SQLite) that no call used for idle; the app's janitor calls it.
func (rl *Relay) ForgetIdlePlanUsage(idle time.Duration) int { return rl.plans.Forget(idle) }
