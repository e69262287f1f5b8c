package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

type planOrderAnswer struct {
	orderInfo
	Pay *payInfo `json:"pay"`
}

func planOrder(t *testing.T, c *apptest.Client, body map[string]any) planOrderAnswer {
	t.Helper()
	return apptest.OKData[planOrderAnswer](c, "POST", "/api/order/plan", body)
}

func getOrder(t *testing.T, c *apptest.Client, id int64) orderInfo {
	t.Helper()
	return apptest.OKData[orderInfo](c, "GET", apptest.Path("/api/order/%d", id), nil)
}

func TestPlanOrdersAndUpgrade(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	clock := apptest.NewClock(time.Now())
	e.App.SetClock(clock.Now)
	root := e.Root()
	basic := createPlan(t, root, planBody("basic", "price", 30, "duration_days", 30))
	pro := createPlan(t, root, planBody("pro", "price", 100, "duration_days", 30))
	hidden := createPlan(t, root, planBody("hidden", "status", 0))
	u, uid := e.NewUser("planbuyer", user.RoleUser)

	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": pro.ID, "mode": "rent"}, http.StatusOK, "mode 只能是 stack 或 price_diff")
	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": pro.ID}, http.StatusOK, "mode 只能是 stack 或 price_diff")
	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": hidden.ID, "mode": "stack"}, http.StatusOK, "套餐不存在或已下架")
	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": 999999, "mode": "stack"}, http.StatusOK, "套餐不存在或已下架")
	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": pro.ID, "mode": "stack", "pay_method": "free"}, http.StatusOK, "自助充值仅支持 wechat / the service / bank")

	// price_diff without an active subscription: full price.
	full := planOrder(t, u, map[string]any{"plan_id": pro.ID, "mode": "price_diff"})
	if full.Amount != 100 || !strings.HasPrefix(full.OrderNo, "UP") || full.ReplacesID != 0 || full.Pay != nil {
		t.Fatalf("price_diff without a subscription: %+v", full)
	}
	// stack: TB, full price; with a pay method the pay answer comes along.
	enableBank(root)
	st := planOrder(t, u, map[string]any{"plan_id": basic.ID, "mode": "stack", "pay_method": "bank"})
	if st.Amount != 30 || !strings.HasPrefix(st.OrderNo, "TB") || st.Type != 1 || st.PlanID != basic.ID || st.Pay == nil || st.Pay.Status != "success" {
		t.Fatalf("stack: %+v", st)
	}
	root.OK("PUT", apptest.Path("/api/order/%d", st.ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "BANK-1"})
	subs, _ := e.App.Store.ActiveUserPlans(context.Background(), uid, e.App.Now().Unix())
	if len(subs) != 1 || subs[0].OrderID != st.ID || subs[0].PlanID != basic.ID || subs[0].EndTime-subs[0].StartTime != 30*86400 {
		t.Fatalf("after stack activation: %+v", subs)
	}
	// Half of the subscription used: 15 of 30 days left.
	old := subs[0]
	clock.Advance(15 * 24 * time.Hour)
	// Upgrade: 100 − 30 paid × 15/30 = 85.00.
	up := planOrder(t, u, map[string]any{"plan_id": pro.ID, "mode": "price_diff"})
	if up.Amount != 85 || up.ReplacesID != old.ID || !strings.HasPrefix(up.OrderNo, "UP") {
		t.Fatalf("upgrade: %+v", up)
	}
	root.OK("POST", apptest.Path("/api/order/%d/test_pay", up.ID), nil)
	replaced, _ := e.App.Store.UserPlanByID(context.Background(), old.ID)
	if replaced.Status != 2 || replaced.EndTime > e.App.Now().Unix() {
		t.Fatalf("the replaced subscription did not end: %+v", replaced)
	}
	subs, _ = e.App.Store.ActiveUserPlans(context.Background(), uid, e.App.Now().Unix())
	if len(subs) != 1 || subs[0].OrderID != up.ID || subs[0].PlanID != pro.ID {
		t.Fatalf("after upgrade: %+v", subs)
	}
}

func TestOrderTransitionsAndRefund(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	enableBank(root)
	topupOn(root)
	u, uid := e.NewUser("trans", user.RoleUser)
	admin, _ := e.NewUser("opsadmin", user.RoleAdmin)

	// 0 → 2 by the owner; then nothing moves it.
	a := topup(t, u, map[string]any{"amount": 5, "pay_method": "bank"})
	c := apptest.OKData[orderInfo](u, "POST", apptest.Path("/api/order/self/%d/cancel", a.Order.ID), nil)
	if c.Status != 2 || c.PayStatus != 0 {
		t.Fatalf("cancel: %+v", c)
	}
	u.Fail("POST", apptest.Path("/api/order/self/%d/cancel", a.Order.ID), nil, http.StatusOK, "订单不是待支付状态")
	u.Fail("POST", apptest.Path("/api/order/self/%d/pay", a.Order.ID), nil, http.StatusOK, "订单不是待支付状态")
	admin.Fail("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1}, http.StatusOK, "订单不是待支付状态")
	root.Fail("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil, http.StatusOK, "订单不是待支付状态")
	if q := userQuota(t, e, uid); q != 0 {
		t.Fatalf("cancelled order credited %d", q)
	}

	// 0 → 1 by admin marking (Admin may), repeated: one credit.
	b := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	admin.Fail("PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 2}, http.StatusOK, "status 只能是 1(已支付)或 3(已退款)")
	admin.Fail("PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 1, "pay_method": "cash"}, http.StatusOK, "pay_method 只能是 mobile_a、mobile_b、bank、offline 或 free")
	admin.Fail("PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 1, "pay_trade_no": "a\x00b"}, http.StatusOK, "")
	for range 3 {
		o := apptest.OKData[orderInfo](admin, "PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "WIRE-7"})
		if o.Status != 1 || o.PayStatus != 1 || o.PayMethod != "bank" || o.PayTradeNo != "WIRE-7" || o.PayTime == 0 {
			t.Fatalf("marked paid: %+v", o)
		}
	}
	if q := userQuota(t, e, uid); q != 12_000_000 || topupLogs(t, e, uid) != 1 {
		t.Fatalf("after repeated marking: quota %d, logs %d", q, topupLogs(t, e, uid))
	}
	// any → 3: a status flip only, the quota stays; a refunded order is
	// never activated again.
	r := apptest.OKData[orderInfo](admin, "PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 3})
	if r.Status != 3 || r.PayStatus != -1 || r.PayTime == 0 {
		t.Fatalf("refund: %+v", r)
	}
	if q := userQuota(t, e, uid); q != 12_000_000 {
		t.Fatalf("refund reversed quota: %d", q)
	}
	admin.Fail("PUT", apptest.Path("/api/order/%d", b.Order.ID), map[string]any{"status": 1}, http.StatusOK, "订单不是待支付状态")
	root.Fail("POST", apptest.Path("/api/order/%d/test_pay", b.Order.ID), nil, http.StatusOK, "订单不是待支付状态")

	// Admin lists with filters, status 0 included.
	for _, q := range []struct {
		query string
		want  int64
	}{
		{"", 2}, {"?status=0", 0}, {"?status=2", 1}, {"?status=3", 1}, {"?type=2", 2}, {"?type=1", 0},
		{apptest.Path("?user_id=%d", uid), 2}, {"?keyword=trans", 2}, {"?keyword=" + b.Order.OrderNo, 1}, {"?source=1", 2}, {"?source=2", 0},
	} {
		if got := admin.OK("GET", "/api/order/"+q.query, nil).Total; got != q.want {
			t.Fatalf("list %s: total %d, want %d", q.query, got, q.want)
		}
	}
	admin.Fail("GET", "/api/order/?status=9", nil, http.StatusOK, "参数 status 只能是 0 到 3")
	if got := admin.OK("GET", "/api/order/search?keyword="+a.Order.OrderNo, nil).Total; got != 1 {
		t.Fatalf("search: %d", got)
	}
	// Delete is Root's.
	admin.Fail("DELETE", apptest.Path("/api/order/%d", a.Order.ID), nil, http.StatusOK, "无权进行此操作,权限不足")
	admin.Fail("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil, http.StatusOK, "无权进行此操作,权限不足")
	root.OK("DELETE", apptest.Path("/api/order/%d", a.Order.ID), nil)
	root.Fail("DELETE", apptest.Path("/api/order/%d", a.Order.ID), nil, http.StatusOK, "订单不存在")
	admin.Fail("GET", apptest.Path("/api/order/%d", a.Order.ID), nil, http.StatusOK, "订单不存在")
}

func TestSelfOrdersOwnerCheck(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	enableBank(root)
	topupOn(root)
	alice, _ := e.NewUser("alice", user.RoleUser)
	bob, _ := e.NewUser("bob", user.RoleUser)
	a := topup(t, alice, map[string]any{"amount": 1, "pay_method": "bank"})
	topup(t, bob, map[string]any{"amount": 2, "pay_method": "bank"})
	for _, req := range []struct{ method, path string }{
		{"GET", "/api/order/self/%d"}, {"POST", "/api/order/self/%d/cancel"}, {"POST", "/api/order/self/%d/pay"},
	} {
		r := bob.Fail(req.method, apptest.Path(req.path, a.Order.ID), nil, http.StatusOK, "订单不存在")
		if strings.Contains(string(r.Raw), a.Order.OrderNo) {
			t.Fatalf("%s leaks the order: %s", req.path, r.Raw)
		}
		// …and the same answer as for an order that does not exist.
		bob.Fail(req.method, apptest.Path(req.path, 999999), nil, http.StatusOK, "订单不存在")
	}
	if got := getOrder(t, root, a.Order.ID); got.Status != 0 {
		t.Fatalf("bob changed alice's order: %+v", got)
	}
	var list []orderInfo
	r := bob.OK("GET", "/api/order/self", nil)
	r.Decode(t, &list)
	if len(list) != 1 || list[0].Amount != 2 || r.Total != 1 {
		t.Fatalf("bob's list: %+v", list)
	}
	if n := alice.OK("GET", "/api/order/self?type=1", nil).Total; n != 0 {
		t.Fatalf("type filter: %d", n)
	}
	bob.Fail("GET", "/api/order/", nil, http.StatusOK, "无权进行此操作,权限不足")
	bob.Fail("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1}, http.StatusOK, "无权进行此操作,权限不足")
}

// TestActivationExactlyOnce runs on the engine MODELGATE_TEST_DB selects:
// 20 concurrent activations of one top-up order (admin marking and the
// test pay in parallel), 20 concurrent identical notifications, and 20
// concurrent activations of a plan order each credit or subscribe once.
func TestActivationExactlyOnce(t *testing.T) {
	apptest.Parallel(t)
	e, _ := newPaymentEnv(t)
	root := e.Root()
	enableBank(root)
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"api_key": "k1"}})
	topupOn(root)
	u, uid := e.NewUser("racer", user.RoleUser)

	parallel := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); f(i) }()
		}
		wg.Wait()
	}
	a := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	parallel(20, func(i int) {
		if i%2 == 0 {
			root.Do("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
		} else {
			root.Do("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
		}
	})
	for range 3 {
		root.OK("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
	}
	if q := userQuota(t, e, uid); q != 12_000_000 || topupLogs(t, e, uid) != 1 {
		t.Fatalf("admin marking and test pay: quota %d, logs %d", q, topupLogs(t, e, uid))
	}

	b := topup(t, u, map[string]any{"amount": 7.77, "pay_method": "mobile_a"})
	replies := make([]string, 20)
	parallel(20, func(i int) { replies[i] = sendNotify(t, e, "mobile_a", b.Order.OrderNo, 777, "k1") })
	for i, r := range replies {
		if r != "SUCCESS" {
			t.Fatalf("notification %d: %q", i, r)
		}
	}
	if q := userQuota(t, e, uid); q != 12_000_000+7_770_000 || topupLogs(t, e, uid) != 2 {
		t.Fatalf("notifications: quota %d, logs %d", q, topupLogs(t, e, uid))
	}

	p := createPlan(t, root, planBody("race-plan", "price", 5))
	o := planOrder(t, u, map[string]any{"plan_id": p.ID, "mode": "stack"})
	parallel(20, func(i int) {
		if i%2 == 0 {
			root.Do("PUT", apptest.Path("/api/order/%d", o.ID), map[string]any{"status": 1, "pay_method": "offline"})
		} else {
			root.Do("POST", apptest.Path("/api/order/%d/test_pay", o.ID), nil)
		}
	})
	subs, err := e.App.Store.ActiveUserPlans(context.Background(), uid, e.App.Now().Unix())
	if err != nil || len(subs) != 1 || subs[0].OrderID != o.ID {
		t.Fatalf("plan order: %d subscriptions, %v", len(subs), err)
	}
}
