package relay_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Plan billing through the HTTP surface (docs/decisions/plans.md, "Plan
// billing"): subscriptions pay before the balance, plan rules 1 and 2, each
// limit in its window, the rate-limit headers, and the fallback order.

// newPlanClock gives the gateway's subscriptions and limit windows a
// movable clock, starting on a 3-hour boundary (every bucket boundary)
// ahead of the real time, so the windows' resets are exact.
func newPlanClock(e *apptest.Env) *apptest.Clock {
	c := apptest.NewClock(time.Unix((time.Now().Unix()/10800+1)*10800, 0))
	e.App.SetClock(c.Now)
	return c
}

// planGateway is a gateway whose user has no balance: only a subscription
// can pay for its calls.
func planGateway(t *testing.T) (*apptest.Env, *fakeupstream.Server, *apptest.Gateway) {
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetQuota(0)
	return e, up, g
}

func TestPlanPaysWithoutBalance(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	planID := g.NewPlan("basic", apptest.PlanLimits{"gpt-test": {"request_period": 100}}, nil)
	g.Subscribe(g.UserID, planID, 30)

	for _, stream := range []bool{false, true} {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream)); r.Status != http.StatusOK {
			t.Fatalf("stream %v: %d %s", stream, r.Status, r.Body)
		}
	}
	logs := g.ConsumeLogs()
	if len(logs) != 2 {
		t.Fatalf("%d consume logs, want 2", len(logs))
	}
	// Default prices 2 and 8 CNY per 1M tokens; 12 prompt + 8 completion.
	want := int64(12*2 + 8*8)
	for _, l := range logs {
		if l.BillingSource != 1 || l.PlanID != planID || l.Quota != want || l.ModelName != "gpt-test" {
			t.Errorf("log %+v, want billing_source 1, plan_id %d, quota %d at balance prices", l, planID, want)
		}
	}
	if a := g.Accounts(); a.Quota != 0 || a.UserUsed != 0 || a.TokenUsed != 0 || a.ChannelUsed != 0 {
		t.Errorf("a plan-billed call moved money: %+v", a)
	}
	if n := up.Count(); n != 2 {
		t.Errorf("upstream called %d times, want 2", n)
	}
}

func TestPlanRule1ServesDefaultModel(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	g.AddModel("gpt-mini", up.URL, 1, 2)
	planID := g.NewPlan("mini", apptest.PlanLimits{"gpt-mini": {"request_period": 100}}, map[string]any{"default_model": "gpt-mini"})
	g.Subscribe(g.UserID, planID, 30)

	r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if got := up.LastRequest().Model; got != "gpt-mini" {
		t.Errorf("upstream received model %q, want the plan's default_model gpt-mini", got)
	}
	logs := g.ConsumeLogs()
	if len(logs) != 1 || logs[0].ModelName != "gpt-mini" || logs[0].PlanID != planID || logs[0].Quota != 12*1+8*2 {
		t.Fatalf("logs %+v, want one of gpt-mini at its price (28)", logs)
	}
	// A model of the plan is served as itself, through its own channel.
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-mini", "hi", true)); r.Status != http.StatusOK {
		t.Fatalf("gpt-mini: %d %s", r.Status, r.Body)
	}
	if got := up.LastRequest().Model; got != "gpt-mini" {
		t.Errorf("upstream received %q", got)
	}
}

func TestPlanRule2RefusesModelOutsidePlan(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	g.AddModel("gpt-mini", up.URL, 1, 2)
	g.SetQuota(10_000_000) // a balance does not change rule 2
	planID := g.NewPlan("mini only", apptest.PlanLimits{"gpt-mini": {}}, nil)
	g.Subscribe(g.UserID, planID, 30)

	r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("%d %s, want 422", r.Status, r.Body)
	}
	got := decodeV1Error(t, r)
	if got.Error.Code != "model_not_in_plan" || !strings.Contains(got.Error.Message, "gpt-test") || !strings.Contains(got.Error.Message, "mini only") {
		t.Errorf("error %+v, want model_not_in_plan naming the model and the plan", got.Error)
	}
	if up.Count() != 0 || len(g.ConsumeLogs()) != 0 || g.Quota(g.UserID) != 10_000_000 {
		t.Errorf("a 422 forwarded or billed something")
	}
	// In English too.
	g.SetOption("MessageLanguage", "en")
	r = e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if got := decodeV1Error(t, r); got.Error.Message != "model gpt-test is not among the models of plan mini only" {
		t.Errorf("English message %q", got.Error.Message)
	}
}

// TestPlanLimitWindows runs each limit kind to its end and moves the clock
// to just before and just after the moment it frees (Reset: the bucket's
// end plus the window's length; docs/decisions/plan-limits.md).
func TestPlanLimitWindows(t *testing.T) {
	apptest.Parallel(t)
	const day = 24 * time.Hour
	for _, tt := range []struct {
		name     string
		rule     map[string]int64
		tokens   int64 // the plan's lifetime allowance
		typ      string
		code     string
		limit    string
		calls    int           // served before the refusal
		frees    time.Duration // after the first call; 0: never
		tooEarly time.Duration
	}{
		{"request_period", map[string]int64{"period_h": 1, "request_period": 2}, 0, "requests", "rate_limit_exceeded", "request_period", 2, time.Hour + 10*time.Minute, time.Hour},
		{"request_week", map[string]int64{"request_week": 2}, 0, "requests", "rate_limit_exceeded", "request_week", 2, 7*day + 3*time.Hour, 7 * day},
		{"request_month", map[string]int64{"request_month": 2}, 0, "requests", "rate_limit_exceeded", "request_month", 2, 30*day + 3*time.Hour, 30 * day},
		{"token_period", map[string]int64{"period_h": 2, "token_period": 1500}, 0, "tokens", "rate_limit_exceeded", "token_period", 1, 2*time.Hour + 10*time.Minute, 2 * time.Hour},
		{"token_period_long", map[string]int64{"period_h": 48, "token_period": 1500}, 0, "tokens", "rate_limit_exceeded", "token_period", 1, 51 * time.Hour, 48 * time.Hour},
		{"token_week", map[string]int64{"token_week": 1500}, 0, "tokens", "rate_limit_exceeded", "token_week", 1, 7*day + 3*time.Hour, 7 * day},
		{"token_month", map[string]int64{"token_month": 1500}, 0, "tokens", "rate_limit_exceeded", "token_month", 1, 30*day + 3*time.Hour, 30 * day},
		{"lifetime tokens", map[string]int64{}, 1500, "insufficient_quota", "insufficient_quota", "tokens", 1, 0, 60 * day},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, up, g := planGateway(t)
			clock := newPlanClock(e)
			// Every call reports 1,490 tokens: a token limit of 1,500 fits
			// one call's estimate, then not a second one.
			up.SetBehavior(fakeupstream.Behavior{PromptTokens: 1480, CompletionTokens: 10})
			g.SetOption("DefaultCompletionSize", "16")
			var extra map[string]any
			if tt.tokens > 0 {
				extra = map[string]any{"tokens": tt.tokens}
			}
			planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": tt.rule}, extra)
			g.Subscribe(g.UserID, planID, 3650)
			body := chatBody("gpt-test", "hi", false)
			body["max_tokens"] = 16
			for i := range tt.calls {
				if r := e.Call(g.Key, "POST", "/v1/chat/completions", body); r.Status != http.StatusOK {
					t.Fatalf("call %d: %d %s", i+1, r.Status, r.Body)
				}
				e.SettleAll()
			}
			refused := func(when string) {
				t.Helper()
				r := e.Call(g.Key, "POST", "/v1/chat/completions", body)
				if r.Status != http.StatusTooManyRequests {
					t.Fatalf("%s: %d %s, want 429", when, r.Status, r.Body)
				}
				got := decodeV1Error(t, r)
				if got.Error.Type != tt.typ || got.Error.Code != tt.code || !strings.Contains(got.Error.Message, tt.limit) {
					t.Errorf("%s: error %+v, want type %s, code %s, naming %s", when, got.Error, tt.typ, tt.code, tt.limit)
				}
				if tt.frees == 0 {
					if r.Header.Get("X-Should-Retry") != "false" || r.Header.Get("Retry-After") != "" {
						t.Errorf("%s: a limit that never frees must tell clients not to retry: %v", when, r.Header)
					}
					return
				}
				reset := clock.Start().Add(tt.frees)
				if !strings.Contains(got.Error.Message, reset.UTC().Format(time.RFC3339)) {
					t.Errorf("%s: message %q does not say when it frees (%s)", when, got.Error.Message, reset)
				}
				wait := reset.Sub(clock.Now())
				if want := strconv.Itoa(int(max(wait, time.Second) / time.Second)); r.Header.Get("Retry-After") != want {
					t.Errorf("%s: Retry-After %q, want %s", when, r.Header.Get("Retry-After"), want)
				}
				if noRetry := r.Header.Get("X-Should-Retry") == "false"; noRetry != (wait > time.Minute) {
					t.Errorf("%s: X-Should-Retry %q with %s to wait", when, r.Header.Get("X-Should-Retry"), wait)
				}
			}
			refused("at the limit")
			clock.Set(tt.tooEarly)
			refused("before it frees")
			if tt.frees == 0 {
				return
			}
			clock.Set(tt.frees - time.Second)
			refused("a second before it frees")
			clock.Set(tt.frees)
			if r := e.Call(g.Key, "POST", "/v1/chat/completions", body); r.Status != http.StatusOK {
				t.Fatalf("when it frees: %d %s", r.Status, r.Body)
			}
			if n := up.Count(); n != tt.calls+1 {
				t.Errorf("upstream called %d times, want %d", n, tt.calls+1)
			}
		})
	}
}

func TestPlanRateLimitHeaders(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	clock := newPlanClock(e)
	// The channel's own rate-limit state must not reach a plan's caller.
	up.SetBehavior(fakeupstream.Behavior{Header: http.Header{"X-Ratelimit-Remaining-Requests": {"4999"}, "X-Ratelimit-Limit-Tokens": {"1"}}})
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"period_h": 1, "request_period": 5, "request_week": 100, "token_month": 100000}}, nil)
	g.Subscribe(g.UserID, planID, 30)
	clock.Set(5 * time.Minute)

	for _, stream := range []bool{false, true} {
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream))
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		// The tightest request limit is request_period (5), counting this
		// call; its window frees 1 h after the current 10-minute bucket.
		remaining := "4"
		if stream {
			remaining = "3"
		}
		want := map[string]string{
			"X-Ratelimit-Limit-Requests":     "5",
			"X-Ratelimit-Remaining-Requests": remaining,
			"X-Ratelimit-Reset-Requests":     "1h5m0s",
			"X-Ratelimit-Limit-Tokens":       "100000",
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("stream %v: %s = %q, want %q", stream, k, got, v)
			}
		}
		if got := r.Header.Get("X-Ratelimit-Remaining-Tokens"); got == "" || got == "100000" {
			t.Errorf("stream %v: remaining tokens %q: the call's estimate must count", stream, got)
		}
		// The month window of the current 3-hour bucket, 5 minutes in.
		if got := r.Header.Get("X-Ratelimit-Reset-Tokens"); got != "722h55m0s" {
			t.Errorf("stream %v: token reset %q, want 722h55m0s", stream, got)
		}
	}
	// A balance-billed call keeps the channel's headers as they came.
	other := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "payer"})
	r := e.Call(other.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusOK || r.Header.Get("X-Ratelimit-Remaining-Requests") != "4999" {
		t.Errorf("balance call: %d, remaining %q, want the channel's 4999", r.Status, r.Header.Get("X-Ratelimit-Remaining-Requests"))
	}
}

// TestPlanFallback: the subscription ending first pays first; one at its
// limit passes the call to the next, then to the balance; when nothing can
// pay the answer names the first subscription's limit.
func TestPlanFallback(t *testing.T) {
	apptest.Parallel(t)
	e, _, g := planGateway(t)
	newPlanClock(e)
	g.SetQuota(1_000_000)
	later := g.NewPlan("later", apptest.PlanLimits{"gpt-test": {"request_period": 1}}, nil)
	sooner := g.NewPlan("sooner", apptest.PlanLimits{"gpt-test": {"request_period": 1}}, nil)
	g.Subscribe(g.UserID, later, 20)
	g.Subscribe(g.UserID, sooner, 10)

	call := func() *apptest.V1 {
		t.Helper()
		return e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	}
	for i := range 3 {
		if r := call(); r.Status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	logs := g.ConsumeLogs() // newest first
	if len(logs) != 3 {
		t.Fatalf("%d logs", len(logs))
	}
	for i, want := range []struct {
		source int
		plan   int64
	}{{0, 0}, {1, later}, {1, sooner}} {
		if logs[i].BillingSource != want.source || logs[i].PlanID != want.plan {
			t.Errorf("log %d: billing_source %d plan %d, want %d and %d", i, logs[i].BillingSource, logs[i].PlanID, want.source, want.plan)
		}
	}
	if q := g.Quota(g.UserID); q != 1_000_000-88 {
		t.Errorf("balance %d, want one call (88) taken by the third call only", q)
	}

	g.SetQuota(0)
	r := call()
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("nothing can pay: %d %s", r.Status, r.Body)
	}
	if got := decodeV1Error(t, r); got.Error.Code != "rate_limit_exceeded" || !strings.Contains(got.Error.Message, "sooner") ||
		!strings.Contains(got.Error.Message, "request_period") {
		t.Errorf("error %+v, want the first subscription's request_period", got.Error)
	}
	if r.Header.Get("X-Ratelimit-Remaining-Requests") != "0" || r.Header.Get("X-Ratelimit-Limit-Requests") != "1" {
		t.Errorf("429 headers %v", r.Header)
	}
	// The same in the Anthropic dialect: a rate_limit_error.
	r = e.Call(g.Key, "POST", "/v1/messages", map[string]any{"model": "gpt-test", "max_tokens": 16,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), `"rate_limit_error"`) {
		t.Errorf("Anthropic ingress: %d %s", r.Status, r.Body)
	}
}

// TestPlanReleasesFailedCalls: a call that fails upstream gives its
// reservation back, so it does not count against the limit.
func TestPlanReleasesFailedCalls(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"request_period": 1}}, nil)
	g.Subscribe(g.UserID, planID, 30)
	up.Script(fakeupstream.Behavior{Status: 400}, fakeupstream.Behavior{Status: 500})
	for range 2 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status == http.StatusOK {
			t.Fatalf("scripted failure answered 200")
		}
	}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("after failures: %d %s: a failed call kept its reservation", r.Status, r.Body)
	}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("second served call: %d, want 429", r.Status)
	}
	if logs := g.ConsumeLogs(); len(logs) != 1 {
		t.Errorf("%d consume logs, want 1", len(logs))
	}
}

// TestPlanParallelCallsServeExactlyTheLimit: 30 parallel calls against
// request_period 10 serve exactly 10, on the engine the suite runs on
// (SQLite, or PostgreSQL / MariaDB with MODELGATE_TEST_DB).
func TestPlanParallelCallsServeExactlyTheLimit(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"request_period": 10}}, nil)
	g.Subscribe(g.UserID, planID, 30)
	up.SetBehavior(fakeupstream.Behavior{Delay: 20 * time.Millisecond})

	var wg sync.WaitGroup
	statuses := make([]int, 30)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", i%2 == 0)).Status
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] != 10 || counts[http.StatusTooManyRequests] != 20 {
		t.Fatalf("statuses %v, want 10 × 200 and 20 × 429", counts)
	}
	if n := up.Count(); n != 10 {
		t.Errorf("upstream called %d times, want 10", n)
	}
	if logs := g.ConsumeLogs(); len(logs) != 10 {
		t.Errorf("%d consume logs, want 10", len(logs))
	}
}

// TestPlanExpiredSubscriptionStopsPaying: past its end a subscription pays
// for nothing, before the expiry job has written it down.
func TestPlanExpiredSubscriptionStopsPaying(t *testing.T) {
	apptest.Parallel(t)
	e, _, g := planGateway(t)
	clock := newPlanClock(e)
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {}}, nil)
	g.Subscribe(g.UserID, planID, 1)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("active: %d %s", r.Status, r.Body)
	}
	clock.Set(25 * time.Hour)
	r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusTooManyRequests || decodeV1Error(t, r).Error.Code != "insufficient_quota" {
		t.Fatalf("expired, no balance: %d %s, want the balance's 429", r.Status, r.Body)
	}
}

// TestPlanUsageSurvivesRestart: the uses a process counted (in memory on
// SQLite) are in the database after a graceful stop, so a new process
// goes on from them; the usage route shows them.
func TestPlanUsageSurvivesRestart(t *testing.T) {
	apptest.Parallel(t)
	e, _, g := planGateway(t)
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"request_period": 2}}, nil)
	subID := g.Subscribe(g.UserID, planID, 30)
	for range 2 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	if r := e2.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("after restart: %d %s, want 429: the uses before it were lost", r.Status, r.Body)
	}
	var usage struct {
		Models []struct {
			Model  string `json:"model"`
			Limits []struct {
				Name      string `json:"name"`
				Used      int64  `json:"used"`
				Remaining int64  `json:"remaining"`
			} `json:"limits"`
		} `json:"models"`
	}
	e2.Root().OK("GET", apptest.Path("/api/subscription/%d/usage", subID), nil).Decode(t, &usage)
	if len(usage.Models) != 1 || len(usage.Models[0].Limits) != 1 || usage.Models[0].Limits[0].Used != 2 || usage.Models[0].Limits[0].Remaining != 0 {
		t.Errorf("usage %+v, want request_period 2 used, 0 remaining", usage)
	}
}

// TestPlanCapsAnOpenCompletion: a call that leaves its completion open
// holds DefaultCompletionSize, or what the tightest token limit leaves
// after the prompt when that is less, and is capped upstream at exactly
// what it holds (docs/decisions/plan-limits.md, "Token holds").
func TestPlanCapsAnOpenCompletion(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	up.SetBehavior(longAnswer)
	g.SetOption("DefaultCompletionSize", "16")
	planID := g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"token_period": 5000}}, nil)
	g.Subscribe(g.UserID, planID, 30)
	call := func() (sent, remaining int64) {
		t.Helper()
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		e.SettleAll()
		remaining, err := strconv.ParseInt(r.Header.Get("X-Ratelimit-Remaining-Tokens"), 10, 64)
		if err != nil {
			t.Fatalf("remaining tokens %q", r.Header.Get("X-Ratelimit-Remaining-Tokens"))
		}
		var body struct {
			MaxTokens           int64 `json:"max_tokens"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
		}
		if err := json.Unmarshal(up.LastRequest().Body, &body); err != nil {
			t.Fatal(err)
		}
		return max(body.MaxTokens, body.MaxCompletionTokens), remaining
	}
	// The window has room: the call holds the prompt's bound and 16.
	sent, remaining := call()
	if sent != 16 {
		t.Fatalf("completion limit sent %d, want DefaultCompletionSize 16", sent)
	}
	bound := 5000 - 16 - remaining // the prompt's bound the hold counted
	// The window has less than a default completion left after the
	// prompt: the call holds the rest, and is capped at it.
	g.SetOption("DefaultCompletionSize", "16384")
	used := int64(10 + 16) // the first call's real use replaced its hold
	sent, remaining = call()
	if want := 5000 - used - bound; sent != want || remaining != 0 {
		t.Errorf("completion limit sent %d with %d tokens remaining, want %d (the window's rest after the prompt) and 0", sent, remaining, want)
	}
}
