// Package ratelimit owns the request, token and concurrency limits of API
// keys and user groups (docs/decisions/rate-limits.md): their validation,
// the window arithmetic, and the limiters that enforce them atomically, in
// memory on one node or through Redis for nodes sharing a database.
package ratelimit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a limit: far above any real traffic, low enough that sums of
// counts never overflow int64.
const (
	MaxRPM         = 1_000_000_000
	MaxTPM         = 1_000_000_000_000
	MaxConcurrency = 1_000_000
)

// Window is the length of the RPM and TPM windows: fixed calendar minutes
// (UTC), the same on every node.
const Window = time.Minute

// Limits are the three limits of one subject (a key, or a user under its
// group's limits); 0 is no limit.
type Limits struct {
	RPM         int64 `json:"rpm"`
	TPM         int64 `json:"tpm"`
	Concurrency int64 `json:"concurrency"`
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.RPM == 0 && l.TPM == 0 && l.Concurrency == 0 }

// Validation messages; %s is a field name, %d its bound.
const (
	msgRangeFmt      = "%s 必须是 0 到 %d 之间的整数(0 表示不限制)"
	msgAboveGroupFmt = "%s 不能超过所在分组 %s 的限制 %d"
	msgGroupLimits   = "必须是 JSON 对象:键为分组名称,值为 {\"rpm\": 整数, \"tpm\": 整数, \"concurrency\": 整数}"
)

// field names of a key's limits in the API.
const (
	FieldRPM         = "rpm_limit"
	FieldTPM         = "tpm_limit"
	FieldConcurrency = "concurrency_limit"
)

// ValidateKey checks a key's limits: each within its bound and, where the
// owner's group sets that limit, not above it (a key narrows what its
// owner may do, it never widens it). It returns the first problem, "" when
// none.
func ValidateKey(l Limits, group string, groupLimits Limits) string {
	for _, f := range []struct {
		name       string
		v, max, gv int64
	}{
		{FieldRPM, l.RPM, MaxRPM, groupLimits.RPM},
		{FieldTPM, l.TPM, MaxTPM, groupLimits.TPM},
		{FieldConcurrency, l.Concurrency, MaxConcurrency, groupLimits.Concurrency},
	} {
		if f.v < 0 || f.v > f.max {
			return fmt.Sprintf(msgRangeFmt, f.name, f.max)
		}
		if f.gv > 0 && f.v > f.gv {
			return fmt.Sprintf(msgAboveGroupFmt, f.name, group, f.gv)
		}
	}
	return ""
}

// ParseGroupLimits reads the GroupRateLimits option: a JSON object mapping
// a group name to its per-user limits. Groups with no limit are left out
// of the result, so looking one up costs a map miss.
func ParseGroupLimits(v string) (map[string]Limits, error) {
	var raw map[string]Limits
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil || dec.More() || raw == nil && strings.TrimSpace(v) != "{}" {
		return nil, errorText(msgGroupLimits)
	}
	out := make(map[string]Limits, len(raw))
	for group, l := range raw {
		if strings.TrimSpace(group) == "" || len(group) > 64 || strings.ContainsFunc(group, badRune) {
			return nil, errorText(msgGroupLimits)
		}
		if msg := ValidateKey(Limits{RPM: l.RPM, TPM: l.TPM, Concurrency: l.Concurrency}, group, Limits{}); msg != "" {
			return nil, errorText(msg)
		}
		if !l.IsZero() {
			out[group] = l
		}
	}
	return out, nil
}

// badRune is a character a group name cannot hold: a control character
// or the replacement of invalid UTF-8.
func badRune(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }

type errorText string

func (e errorText) Error() string { return string(e) }

// WindowOf is the number of the window holding t.
func WindowOf(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - 59) / 60
	}
	return s / 60
}

// ResetIn is how long after t its window ends (more than 0, at most a
// minute).
func ResetIn(t time.Time) time.Duration {
	end := time.Unix((WindowOf(t)+1)*60, 0)
	return end.Sub(t)
}

// Share is the part of limit l one node of n enforces on its own (a
// multi-active cluster without shared counters): ceil(l/n), so n nodes
// serve at most l + n − 1 together, and never 0 where l is not 0.
func Share(l int64, n int) int64 {
	if l <= 0 || n <= 1 {
		return l
	}
	return (l + int64(n) - 1) / int64(n)
}

// shareOf applies Share to each limit of l.
func shareOf(l Limits, n int) Limits {
	return Limits{RPM: Share(l.RPM, n), TPM: Share(l.TPM, n), Concurrency: Share(l.Concurrency, n)}
}

// Counts are a subject's use: requests and tokens in the current window,
// calls in flight.
type Counts struct {
	Requests, Tokens, Inflight int64
}

// Scope says whose limit refused a call.
type Scope uint8

const (
	ScopeNone Scope = iota
	ScopeKey
	ScopeGroup
)

// Measure says which limit refused a call.
type Measure uint8

const (
	MeasureNone Measure = iota
	MeasureRequests
	MeasureTokens
	MeasureConcurrency
)

// refusal is which limit of l a new call estimated at est tokens would
// break given the subject's counts c: requests first, then tokens, then
// concurrency. A call is admitted when after it the requests are at most
// RPM, the tokens (with its estimate) at most TPM and the calls in flight
// at most Concurrency; a call whose estimate alone exceeds TPM is refused.
func refusal(l Limits, c Counts, est int64) Measure {
	switch {
	case l.RPM > 0 && c.Requests >= l.RPM:
		return MeasureRequests
	case l.TPM > 0 && c.Tokens+est > l.TPM:
		return MeasureTokens
	case l.Concurrency > 0 && c.Inflight >= l.Concurrency:
		return MeasureConcurrency
	}
	return MeasureNone
}

// Quota is one measure's limit and what is left of it, for OpenAI's
// x-ratelimit headers; Limit 0 means the measure is not limited.
type Quota struct {
	Limit, Remaining int64
}

// Result is a limiter's answer to a call.
type Result struct {
	// Scope and Measure name the limit that refused the call (ScopeNone:
	// admitted); Limit is its value as the node enforced it.
	Scope   Scope
	Measure Measure
	Limit   int64
	// Requests and Tokens are the tightest RPM and TPM of the call's
	// subjects; Reset is when the window ends.
	Requests, Tokens Quota
	Reset            time.Duration
	// Unavailable: the shared counters could not be reached and the fail
	// mode is closed.
	Unavailable bool
}

// Refused reports whether the call must be refused.
func (r *Result) Refused() bool { return r.Scope != ScopeNone || r.Unavailable }

// judge fills r from the subjects' limits and counts before the call (key
// first): which limit refuses it, and the tightest quotas as they would be
// after it when it is admitted.
func judge(r *Result, key, user Limits, kc, uc Counts, est int64, hasUser bool) {
	if m := refusal(key, kc, est); m != MeasureNone {
		r.Scope, r.Measure, r.Limit = ScopeKey, m, pick(key, m)
	} else if m := refusal(user, uc, est); hasUser && m != MeasureNone {
		r.Scope, r.Measure, r.Limit = ScopeGroup, m, pick(user, m)
	}
	after := int64(1)
	tokens := est
	if r.Scope != ScopeNone {
		after, tokens = 0, 0
	}
	tight := func(q *Quota, limit, used int64) {
		if limit <= 0 {
			return
		}
		rem := max(limit-used, 0)
		if q.Limit == 0 || rem < q.Remaining {
			*q = Quota{Limit: limit, Remaining: rem}
		}
	}
	tight(&r.Requests, key.RPM, kc.Requests+after)
	tight(&r.Tokens, key.TPM, kc.Tokens+tokens)
	if hasUser {
		tight(&r.Requests, user.RPM, uc.Requests+after)
		tight(&r.Tokens, user.TPM, uc.Tokens+tokens)
	}
}

// pick is l's limit of measure m.
func pick(l Limits, m Measure) int64 {
	switch m {
	case MeasureRequests:
		return l.RPM
	case MeasureTokens:
		return l.TPM
	case MeasureConcurrency:
		return l.Concurrency
	}
	return 0
}
