package relay_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/pricing"
)

// TestAbsurdUsageBilledAtCap: an upstream that reports absurd token counts
// for a model at the highest price is billed at most pricing.MaxCallCost a
// call. The balance and the used-quota counters stay integers every reader
// can scan (before the cap a second such call overflowed used_quota: a REAL
// on SQLite, "bigint out of range" failing every later batch on PostgreSQL),
// and the process starts again on that database.
func TestAbsurdUsageBilledAtCap(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 4e18, CompletionTokens: 4e18})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, InputPrice: pricing.MaxPrice, OutputPrice: pricing.MaxPrice,
		Quota: pricing.MaxBalance})
	for _, stream := range []bool{false, true, false} {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream)); r.Status != http.StatusOK {
			t.Fatalf("stream %v: %d %s", stream, r.Status, r.Body)
		}
	}
	a := g.Accounts()
	logs := g.ConsumeLogs()
	sum := apptest.SumQuota(logs)
	for _, l := range logs {
		if l.Quota <= 0 || l.Quota > pricing.MaxCallCost {
			t.Errorf("call billed %d, want 1..%d", l.Quota, pricing.MaxCallCost)
		}
	}
	if len(logs) != 3 || a.UserUsed != sum || a.TokenUsed != sum || a.ChannelUsed != sum || a.Quota != pricing.MaxBalance-sum {
		t.Fatalf("accounts %+v, %d logs summing to %d", a, len(logs), sum)
	}
	g.Root.OK("GET", "/api/channel/", nil)
	g.Root.OK("GET", "/api/user/", nil)
	g.User.OK("GET", "/api/user/self", nil)

	e.Stop()
	again := apptest.Start(t, e.Config)
	again.Root().OK("GET", "/api/channel/", nil)
}
