package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// revenue is the overview's revenue and reconciliation.
type revenueView struct {
	Revenue struct {
		Total, Topup, Subscription, Refund float64
	}
	Reconciliation struct {
		Received        float64 `json:"received"`
		PaidOrders      float64 `json:"paid_orders"`
		ReceivedQuota   int64   `json:"received_quota"`
		PaidOrdersQuota int64   `json:"paid_orders_quota"`
		Balanced        bool    `json:"balanced"`
		Differences     []struct {
			OrderID     int64   `json:"order_id"`
			Received    float64 `json:"received"`
			OrderStatus int     `json:"order_status"`
		} `json:"differences"`
	} `json:"reconciliation"`
}

func revenueNow(t *testing.T, c *apptest.Client) revenueView {
	t.Helper()
	return apptest.OKData[revenueView](c, "GET", "/api/admin/dashboard/overview?range=all", nil)
}

// TestAdminCannotCreditItself: an admin credits only users of a lower
// role, never itself, by every path — marking its own or root's order
// paid (free or not) or refunded, granting itself a subscription,
// redeeming its own code or another admin's. Root may do all of it.
func TestAdminCannotCreditItself(t *testing.T) {
	apptest.Parallel(t)
	e, _, _ := commerceEnv(t)
	root := e.Root()
	x := createPlan(t, root, planBody("X", "price", 100, "duration_days", 30))
	admin, adminID := e.NewUser("selfish", user.RoleAdmin)
	other, otherID := e.NewUser("peer", user.RoleAdmin)
	u, uid := e.NewUser("customer", user.RoleUser)
	const forbidden = "无权管理同级或更高权限的用户"

	own := topup(t, admin, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	for _, method := range []string{"free", "bank", ""} {
		admin.Fail("PUT", apptest.Path("/api/order/%d", own.Order.ID), map[string]any{"status": 1, "pay_method": method}, http.StatusOK, forbidden)
	}
	admin.Fail("PUT", apptest.Path("/api/order/%d", own.Order.ID), map[string]any{"status": 3}, http.StatusOK, forbidden)
	peers := topup(t, other, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	admin.Fail("PUT", apptest.Path("/api/order/%d", peers.Order.ID), map[string]any{"status": 1, "pay_method": "free"}, http.StatusOK, forbidden)
	roots := topup(t, root, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	admin.Fail("PUT", apptest.Path("/api/order/%d", roots.Order.ID), map[string]any{"status": 1}, http.StatusOK, forbidden)
	ownPlan := planOrder(t, admin, map[string]any{"plan_id": x.ID, "mode": "stack"})
	admin.Fail("PUT", apptest.Path("/api/order/%d", ownPlan.ID), map[string]any{"status": 1, "pay_method": "free"}, http.StatusOK, forbidden)
	admin.Fail("POST", "/api/subscription/", map[string]any{"user_id": adminID, "plan_id": x.ID}, http.StatusOK, forbidden)
	admin.Fail("POST", "/api/subscription/", map[string]any{"user_id": otherID, "plan_id": x.ID}, http.StatusOK, forbidden)

	codes := createCodes(t, admin, "mine", 5_000_000, 2)
	const rank = "不能兑换自己或同级、更高权限的管理员创建的兑换码"
	admin.Fail("POST", "/api/user/topup", map[string]any{"key": codes[0]}, http.StatusOK, rank)
	other.Fail("POST", "/api/user/topup", map[string]any{"key": codes[0]}, http.StatusOK, rank)
	admin.Header.Set("Idempotency-Key", "self-redeem")
	admin.Fail("POST", "/api/user/topup", map[string]any{"key": codes[1]}, http.StatusOK, rank)
	admin.Header.Del("Idempotency-Key")
	for _, id := range []int64{adminID, otherID} {
		if q := userQuota(t, e, id); q != 0 || topupLogs(t, e, id) != 0 {
			t.Fatalf("user %d credited %d", id, q)
		}
		if n := len(activeSubs(t, e, id)); n != 0 {
			t.Fatalf("user %d got %d subscriptions", id, n)
		}
	}
	// A refused redemption left the code unused: a user redeems it.
	if got := apptest.OKData[int64](u, "POST", "/api/user/topup", map[string]any{"key": codes[0]}); got != 5_000_000 {
		t.Fatalf("user redeemed %d", got)
	}

	// What an admin may: a user's order, a user's subscription.
	uo := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	admin.OK("PUT", apptest.Path("/api/order/%d", uo.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
	admin.OK("POST", "/api/subscription/", map[string]any{"user_id": uid, "plan_id": x.ID})
	// Root may credit anyone, itself included.
	root.OK("PUT", apptest.Path("/api/order/%d", own.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
	root.OK("PUT", apptest.Path("/api/order/%d", roots.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
}

// TestRevenueIsMoneyReceived: free orders are not revenue; deleting a
// paid order leaves revenue unchanged and shows in the reconciliation;
// a refund moves the payment to refund.
func TestRevenueIsMoneyReceived(t *testing.T) {
	apptest.Parallel(t)
	e, _, _ := commerceEnv(t)
	root := e.Root()
	free := createPlan(t, root, planBody("Free", "price", 0, "duration_days", 7))
	u, _ := e.NewUser("spender", user.RoleUser)
	if r := revenueNow(t, root); r.Revenue.Total != 0 || !r.Reconciliation.Balanced {
		t.Fatalf("empty: %+v", r)
	}

	paid := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "mobile_a"})
	if got := sendNotify(t, e, "mobile_a", paid.Order.OrderNo, 1000, "sekrit"); got != "SUCCESS" {
		t.Fatalf("pay: %q", got)
	}
	gift := topup(t, u, map[string]any{"amount": 30, "pay_method": "bank"})
	root.OK("PUT", apptest.Path("/api/order/%d", gift.Order.ID), map[string]any{"status": 1, "pay_method": "free"})
	planOrder(t, u, map[string]any{"plan_id": free.ID, "mode": "stack"}) // amount 0, free
	r := revenueNow(t, root)
	if r.Revenue.Total != 10 || r.Revenue.Topup != 10 || r.Revenue.Subscription != 0 {
		t.Fatalf("revenue with free orders: %+v", r.Revenue)
	}
	rec := r.Reconciliation
	if rec.Received != 10 || rec.PaidOrders != 10 || rec.ReceivedQuota != 12_000_000 || rec.PaidOrdersQuota != 12_000_000 || !rec.Balanced {
		t.Fatalf("reconciliation: %+v", rec)
	}

	root.OK("DELETE", apptest.Path("/api/order/%d", paid.Order.ID), nil)
	r = revenueNow(t, root)
	if r.Revenue.Total != 10 || r.Revenue.Topup != 10 {
		t.Fatalf("revenue after deleting the paid order: %+v", r.Revenue)
	}
	rec = r.Reconciliation
	if rec.Balanced || rec.Received != 10 || rec.PaidOrders != 0 || len(rec.Differences) != 1 ||
		rec.Differences[0].OrderID != paid.Order.ID || rec.Differences[0].OrderStatus != -1 || rec.Differences[0].Received != 10 {
		t.Fatalf("reconciliation after deleting the paid order: %+v", rec)
	}

	second := topup(t, u, map[string]any{"amount": 2.5, "pay_method": "bank"})
	root.OK("PUT", apptest.Path("/api/order/%d", second.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
	root.OK("PUT", apptest.Path("/api/order/%d", second.Order.ID), map[string]any{"status": 3})
	if r := revenueNow(t, root); r.Revenue.Total != 10 || r.Revenue.Refund != 2.5 {
		t.Fatalf("revenue after a refund: %+v", r.Revenue)
	}
}

// postWithKey posts body to path as c with its own Idempotency-Key (the
// client's Header is shared by its goroutines).
func postWithKey(t *testing.T, e *apptest.Env, c *apptest.Client, path string, body any, key string) *apptest.Response {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", e.Server.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Error(err)
		return &apptest.Response{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", c.CookieHeader())
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return &apptest.Response{}
	}
	defer resp.Body.Close()
	r := &apptest.Response{Status: resp.StatusCode}
	raw, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, r)
	return r
}

// TestConcurrentIdempotentRedemptions: 300 concurrent redemptions — 100
// of one code under one Idempotency-Key, 200 of 99 codes each under its
// own key — with 75 admin top-ups of the same balance (20 keys) never
// answer 500 (MariaDB deadlocks are retried); the code credits once.
func TestConcurrentIdempotentRedemptions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	codes := createCodes(t, root, "burst", 1_000_000, 100)
	u, uid := e.NewUser("burster", user.RoleUser)
	v, vid := e.NewUser("spreader", user.RoleUser)
	u.Header.Set("Idempotency-Key", "same-code")
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for i := range 300 {
		wg.Go(func() {
			var r *apptest.Response
			if i >= 200 {
				r = u.Do("POST", "/api/user/topup", map[string]any{"key": codes[0]})
			} else {
				r = postWithKey(t, e, v, "/api/user/topup", map[string]any{"key": codes[1+i%99]}, fmt.Sprintf("k-%d", i%99))
			}
			if i%4 == 0 { // and admin top-ups of the same balance meanwhile
				postWithKey(t, e, root, "/api/topup", map[string]any{"user_id": vid, "quota": 1}, fmt.Sprintf("t-%d", (i/4)%20))
			}
			mu.Lock()
			answers[fmt.Sprintf("%d %v", r.Status, r.Success)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if answers["200 true"]+answers["200 false"] != 300 {
		t.Fatalf("answers %v: some were not 200", answers)
	}
	if q := userQuota(t, e, uid); q != 1_000_000 {
		t.Fatalf("the one code credited %d", q)
	}
	if q := userQuota(t, e, vid); q != 99_000_000+20 || topupLogs(t, e, vid) != 99+20 {
		t.Fatalf("99 distinct codes and 20 top-ups credited %d in %d logs", q, topupLogs(t, e, vid))
	}
}

// TestTopupSettingsWarnings: the settings answers (GET and the save) list
// what sells for less than it charges, so scripts see the console's
// warnings.
func TestTopupSettingsWarnings(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	type view struct {
		Warnings []string `json:"warnings"`
	}
	r := root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 0}, {"amount": 20, "bonus_quota": 19_000_000}, {"amount": 30, "bonus_quota": 30_000_000}}})
	var saved view
	r.Decode(t, &saved)
	want := []string{"第 1 项售价 10.00 元,到账 0 额度", "第 2 项售价 20.00 元,只到账 19.00 元(按兑换比例应到账 20000000 额度)"}
	got := apptest.OKData[view](root, "GET", "/api/setting/topup", nil)
	if fmt.Sprint(saved.Warnings) != fmt.Sprint(want) || fmt.Sprint(got.Warnings) != fmt.Sprint(want) {
		t.Fatalf("warnings: saved %q, read %q; want %q", saved.Warnings, got.Warnings, want)
	}
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "exchange_rate": 1})
	if got := apptest.OKData[view](root, "GET", "/api/setting/topup", nil); len(got.Warnings) != 1 || got.Warnings[0] != "兑换比例为 1:每支付 1 元只到账 1 额度(0.000001 元);1 元余额是 1000000 额度" {
		t.Fatalf("rate 1: %q", got.Warnings)
	}
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 10_000_000}}})
	if got := apptest.OKData[view](root, "GET", "/api/setting/topup", nil); len(got.Warnings) != 0 {
		t.Fatalf("sound settings warn: %q", got.Warnings)
	}
}
