package api_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// TestTopupActivationReachesTheLedger: a balance credited by an order's
// activation is spendable at once, and the balance after a call is exactly
// credit − cost (the billing ledger's in-memory balance saw the credit).
func TestTopupActivationReachesTheLedger(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Quota: 1})
	enableBank(g.Root)
	topupOn(g.Root)
	chat := map[string]any{"model": "gpt-test", "messages": []map[string]any{{"role": "user", "content": "hello"}}}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status == http.StatusOK {
		t.Fatalf("a call on a balance of 1 quota succeeded")
	}
	a := topup(t, g.User, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	g.Root.OK("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("after the top-up: %d %s", r.Status, r.Body)
	}
	cost := apptest.SumQuota(g.ConsumeLogs())
	if got, want := g.Quota(g.UserID), 1+12_000_000-cost; cost <= 0 || got != want {
		t.Fatalf("balance %d, want %d (cost %d)", got, want, cost)
	}
}
