package relay

import (
	"math"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/internal/ratelimit"
)

// Rate and concurrency limits of keys and groups in the relay
// (docs/decisions/rate-limits.md): a call is admitted after its body is
// parsed and before anything is reserved, so a refused call holds no
// money; its hold on the limits is given back after settlement.

// Messages of a reached limit; %s is the group, %d the limit as this node
// enforces it.
const (
	msgKeyRPMFmt          = "令牌每分钟请求数限制 %d 已达到"
	msgKeyTPMFmt          = "令牌每分钟 token 数限制 %d 已达到"
	msgKeyConcurrencyFmt  = "令牌并发请求数限制 %d 已达到"
	msgGroupRPMFmt        = "分组 %s 每用户每分钟请求数限制 %d 已达到"
	msgGroupTPMFmt        = "分组 %s 每用户每分钟 token 数限制 %d 已达到"
	msgGroupConcurrentFmt = "分组 %s 每用户并发请求数限制 %d 已达到"
	msgLimitsUnavailable  = "限流服务暂不可用,请稍后重试"
)

// codeLimitsUnavailable answers a limited call refused because the shared
// counters (Redis) do not answer and RateLimitFailClosed is on.
const codeLimitsUnavailable = "rate_limit_unavailable"

// admitLimits checks the call against its key's and its group's limits
// and counts it: limited, it returns the call's hold on them, to give back
// with releaseLimits. A call with no limit configured costs a map lookup.
func (c *call) admitLimits() (ticket ratelimit.Ticket, limited bool, err error) {
	t := &c.key.token
	key := ratelimit.Limits{RPM: t.RPMLimit, TPM: t.TPMLimit, Concurrency: t.ConcurrencyLimit}
	opts := c.rl.Options.Current()
	user := opts.GroupRateLimits[c.key.user.Group]
	if key.IsZero() && user.IsZero() {
		return ticket, false, nil
	}
	req := ratelimit.Request{KeyID: t.ID, UserID: c.key.user.ID, Key: key, User: user,
		Tokens: c.tokenEstimate(), Now: c.rl.now(), FailClosed: opts.RateLimitFailClosed}
	ticket, res := c.rl.Limits.Admit(c.r.Context(), &req)
	if res.Refused() {
		return ratelimit.Ticket{}, false, limitReached(&res, c.key.user.Group)
	}
	return ticket, true, nil
}

// tokenEstimate is what the call holds against TPM until it settles: the
// prompt's bound as balance billing computes it (never below the real
// prompt) and the completion the request asks for at most, when it says.
// A call that sets no completion limit holds its prompt only; its
// completion counts when it settles (the documented slack).
//
// The sum saturates above the largest TPM limit: a max_tokens near
// int64's limit must not wrap to a negative estimate, which would free
// tokens instead of holding them; such a call is refused by any TPM limit.
func (c *call) tokenEstimate() int64 {
	const ceiling = ratelimit.MaxTPM + 1
	est := min(c.promptBound(), ceiling)
	if n := max(c.meta.choices, 1); c.meta.maxTokens > 0 {
		if c.meta.maxTokens > (ceiling-est)/n {
			return ceiling
		}
		est += c.meta.maxTokens * n
	}
	return est
}

// releaseLimits gives back the call's hold t: its concurrency slot, and
// its token estimate replaced by the tokens of the answer settled (none
// when no channel answered it). run defers it once, after settlement.
func (c *call) releaseLimits(t *ratelimit.Ticket) {
	var used int64
	if a := &c.out; a.channel != nil {
		used = min(max(a.usage.PromptTokens, 0), ratelimit.MaxTPM) + min(max(a.usage.CompletionTokens, 0), ratelimit.MaxTPM)
	}
	c.rl.Limits.Done(t, used)
}

// limitReached is the 429 of a limit, with OpenAI's type ("requests" or
// "tokens"), code and headers, and Retry-After: the end of the window for
// RPM and TPM, a second for concurrency.
func limitReached(r *ratelimit.Result, group string) *apiError {
	if r.Unavailable {
		e := errf(http.StatusServiceUnavailable, "server_error", codeLimitsUnavailable, msgLimitsUnavailable)
		e.header = http.Header{"Retry-After": {"1"}}
		return e
	}
	typ, format := "requests", ""
	switch r.Measure {
	case ratelimit.MeasureRequests:
		format = pickFmt(r.Scope, msgKeyRPMFmt, msgGroupRPMFmt)
	case ratelimit.MeasureTokens:
		typ, format = "tokens", pickFmt(r.Scope, msgKeyTPMFmt, msgGroupTPMFmt)
	default:
		format = pickFmt(r.Scope, msgKeyConcurrencyFmt, msgGroupConcurrentFmt)
	}
	var e *apiError
	if r.Scope == ratelimit.ScopeKey {
		e = errf(http.StatusTooManyRequests, typ, codeRateLimit, format, r.Limit)
	} else {
		e = errf(http.StatusTooManyRequests, typ, codeRateLimit, format, group, r.Limit)
	}
	h := http.Header{}
	reset := resetText(r.Reset)
	for i, q := range [2]ratelimit.Quota{r.Requests, r.Tokens} {
		if q.Limit > 0 {
			h[rateLimitKeys[i][0]] = []string{strconv.FormatInt(q.Limit, 10)}
			h[rateLimitKeys[i][1]] = []string{strconv.FormatInt(q.Remaining, 10)}
			h[rateLimitKeys[i][2]] = []string{reset}
		}
	}
	retry := int64(1)
	if r.Measure != ratelimit.MeasureConcurrency {
		retry = int64(math.Ceil(max(r.Reset.Seconds(), 1)))
	}
	h["Retry-After"] = []string{strconv.FormatInt(retry, 10)}
	e.header = h
	return e
}

func pickFmt(s ratelimit.Scope, key, group string) string {
	if s == ratelimit.ScopeKey {
		return key
	}
	return group
}
