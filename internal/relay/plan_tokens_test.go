package relay_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// Plan token limits that hold (docs/decisions/plan-limits.md, "Token
// holds"): a plan-billed call writes no more than its hold, so parallel
// open calls cannot spend a window several times over, and a call with a
// small max_tokens holds that, not DefaultCompletionSize, so a small
// window serves it. The same on one node (the in-memory book on SQLite,
// or ReserveUsage's counters on a server database) and on two nodes
// sharing PostgreSQL or MariaDB (usage slices).

// longAnswer is a model that writes exactly the completion limit it is
// given, and a long answer (100,000 tokens) when given none; it reports a
// prompt of 10 tokens, within the relay's bound of the prompt, so a total
// past the window can only come from completions.
var longAnswer = fakeupstream.Behavior{PromptTokens: 10, CompletionTokens: 100_000, HonourLimit: true,
	Delay: 30 * time.Millisecond}

// planTokenNodes is one gateway (one node, or two sharing a database)
// whose user pays only by a subscription to a plan of limits, with the
// nodes' plan windows on one movable clock.
type planTokenNodes struct {
	nodes []*apptest.Env
	up    *fakeupstream.Server
	g     *apptest.Gateway
	clock *apptest.Clock
}

func singlePlanNode(t *testing.T, limits map[string]int64) planTokenNodes {
	e, up, g := planGateway(t)
	up.SetBehavior(longAnswer)
	clock := newPlanClock(e)
	g.Subscribe(g.UserID, g.NewPlan("p", apptest.PlanLimits{"gpt-test": limits}, nil), 30)
	return planTokenNodes{nodes: []*apptest.Env{e}, up: up, g: g, clock: clock}
}

func fleetPlanNodes(t *testing.T, en storetest.Engine, limits map[string]int64) planTokenNodes {
	nodes, up, g := fleetSetup(t, en, apptest.GatewayConfig{}, longAnswer, func(g *apptest.Gateway) {
		g.SetQuota(0)
		g.Subscribe(g.UserID, g.NewPlan("p", apptest.PlanLimits{"gpt-test": limits}, nil), 30)
	})
	clock := newPlanClock(nodes[0])
	nodes[1].App.SetClock(clock.Now)
	return planTokenNodes{nodes: nodes[:], up: up, g: g, clock: clock}
}

// parallel sends n identical calls at once, call i to node i % nodes.
func (p planTokenNodes) parallel(n int, body map[string]any) []nodeCall {
	raw, _ := json.Marshal(body)
	results := make([]nodeCall, n)
	start := make(chan struct{})
	done := make(chan struct{})
	for i := range results {
		node := i % len(p.nodes)
		url := p.nodes[node].URL() + "/v1/chat/completions"
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			results[i] = nodeCall{node: node, callResult: post(url, p.g.Key, raw)}
		}()
	}
	close(start)
	for range results {
		<-done
	}
	return results
}

// billedTokens is the prompt and completion tokens of every plan-billed
// call, and the largest completion one of them wrote.
func (p planTokenNodes) billedTokens(t *testing.T) (total, largest int64, calls int) {
	t.Helper()
	p.nodes[0].SettleAll()
	for _, l := range p.g.ConsumeLogs() {
		if l.BillingSource != 1 {
			t.Errorf("log %d billed from source %d, want the plan (1)", l.ID, l.BillingSource)
		}
		total += l.PromptTokens + l.CompletionTokens
		largest = max(largest, l.CompletionTokens)
		calls++
	}
	return total, largest, calls
}

// checkTokenRefusal fails t unless r is the 429 of token_period reached,
// with its use and the time it frees: the first use's fine bucket (which
// starts at the clock's start) leaves the 5-hour window 10 minutes after
// 5 hours.
func (p planTokenNodes) checkTokenRefusal(t *testing.T, r nodeCall, limit int64) {
	t.Helper()
	reset := p.clock.Start().Add(5*time.Hour + 10*time.Minute).UTC().Format(time.RFC3339)
	if r.status != http.StatusTooManyRequests || r.typ != "tokens" || r.code != "rate_limit_exceeded" {
		t.Fatalf("refusal %d %s/%s %q, want 429 tokens/rate_limit_exceeded", r.status, r.typ, r.code, r.message)
	}
	want := "套餐 p 的模型 gpt-test 已达到限额 token_period(%d/" + fmt.Sprint(limit) + "),将于 " + reset + " 恢复"
	m := regexp.MustCompile(`已达到限额 token_period\((\d+)/`).FindStringSubmatch(r.message)
	if m == nil {
		t.Fatalf("refusal %q, want %q", r.message, want)
	}
	used, _ := strconv.ParseInt(m[1], 10, 64)
	if fmt.Sprintf(want, used) != r.message {
		t.Fatalf("refusal %q, want %q", r.message, fmt.Sprintf(want, used))
	}
	if used > limit {
		t.Errorf("refusal says %d of %d used", used, limit)
	}
}

// openCallsHoldTheWindow: 12 parallel open calls against a 100,000-token
// window, each allowed DefaultCompletionSize (16,384): together they write
// no more than the window, and each no more than one default completion.
func openCallsHoldTheWindow(t *testing.T, p planTokenNodes) {
	const window = 100_000
	results := p.parallel(12, chatBody("gpt-test", "write until stopped", false))
	served := 0
	for _, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("node %d: %v", r.node+1, r.err)
		case r.status == http.StatusOK:
			served++
		default:
			p.checkTokenRefusal(t, r, window)
		}
	}
	total, largest, calls := p.billedTokens(t)
	t.Logf("%d of 12 served, %d plan tokens billed, largest completion %d", served, total, largest)
	if calls != served || p.up.Count() != served {
		t.Errorf("%d logs and %d upstream calls for %d served", calls, p.up.Count(), served)
	}
	// Before the fix: 351,998 tokens from 6 calls. The prompt the model
	// reports is within the relay's bound, so no call's estimate missed:
	// the window itself bounds the total.
	if total > window {
		t.Errorf("billed %d plan tokens against a window of %d", total, window)
	}
	if largest > 16_384 {
		t.Errorf("a call wrote %d tokens, more than DefaultCompletionSize", largest)
	}
	// Six default completions fit; the rest of the window serves more.
	if served < 6 {
		t.Errorf("served %d, want at least 6 (six default completions fit the window)", served)
	}
}

// smallWindowServesBoundedCalls: with a 3,000-token window, calls with
// max_tokens 500 are served until the window is used (12 at once, then
// one at a time), the total never passes 3,000, and the refusal names
// token_period and when it frees; it serves again then.
func smallWindowServesBoundedCalls(t *testing.T, p planTokenNodes) {
	const window = 3_000
	body := chatBody("gpt-test", "hi", false)
	body["max_tokens"] = 500
	served := 0
	for _, r := range p.parallel(12, body) {
		switch {
		case r.err != nil:
			t.Fatalf("node %d: %v", r.node+1, r.err)
		case r.status == http.StatusOK:
			served++
		default:
			p.checkTokenRefusal(t, r, window)
		}
	}
	raw, _ := json.Marshal(body)
	// One at a time, alternating nodes, until each node refused in turn.
	for i, refusedInARow := 0, 0; refusedInARow < len(p.nodes); i++ {
		p.nodes[0].SettleAll()
		if i > 20 {
			t.Fatal("20 more calls of 510 tokens served by a window of 3,000")
		}
		node := i % len(p.nodes)
		r := nodeCall{node: node, callResult: post(p.nodes[node].URL()+"/v1/chat/completions", p.g.Key, raw)}
		if r.status == http.StatusOK {
			served++
			refusedInARow = 0
			continue
		}
		p.checkTokenRefusal(t, r, window)
		refusedInARow++
	}
	total, largest, calls := p.billedTokens(t)
	t.Logf("%d served, %d plan tokens billed", served, total)
	if calls != served || largest > 500 {
		t.Errorf("%d logs for %d served, largest completion %d", calls, served, largest)
	}
	if total > window {
		t.Errorf("billed %d plan tokens against a window of %d", total, window)
	}
	// Each call holds its prompt's bound and 500: at least four fit in
	// 3,000, whatever the prompt's bound of this small body.
	if served < 4 {
		t.Errorf("served %d calls of max_tokens 500 in a window of 3,000, want at least 4", served)
	}
	p.clock.Set(5*time.Hour + 10*time.Minute)
	if r := post(p.nodes[0].URL()+"/v1/chat/completions", p.g.Key, raw); r.status != http.StatusOK {
		t.Errorf("once the window freed: %d %q", r.status, r.message)
	}
}

func TestPlanOpenCallsHoldTheWindow(t *testing.T) {
	apptest.Parallel(t)
	p := singlePlanNode(t, map[string]int64{"token_period": 100_000})
	openCallsHoldTheWindow(t, p)
}

func TestPlanSmallWindowServesBoundedCalls(t *testing.T) {
	apptest.Parallel(t)
	p := singlePlanNode(t, map[string]int64{"token_period": 3_000})
	smallWindowServesBoundedCalls(t, p)
}

func TestFleetPlanOpenCallsHoldTheWindow(t *testing.T) {
	apptest.Parallel(t)
	eachServerEngine(t, func(t *testing.T, en storetest.Engine) {
		openCallsHoldTheWindow(t, fleetPlanNodes(t, en, map[string]int64{"token_period": 100_000}))
	})
}

func TestFleetPlanSmallWindowServesBoundedCalls(t *testing.T) {
	apptest.Parallel(t)
	eachServerEngine(t, func(t *testing.T, en storetest.Engine) {
		smallWindowServesBoundedCalls(t, fleetPlanNodes(t, en, map[string]int64{"token_period": 3_000}))
	})
}
