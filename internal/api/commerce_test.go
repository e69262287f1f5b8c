package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// commerceEnv is an app with the fake wallets, the app clock under the
// test's control, the mobile_a channel on and top-up on.
func commerceEnv(t *testing.T) (*apptest.Env, *fakeWallet, *apptest.Clock) {
	t.Helper()
	e, wallet := newPaymentEnv(t)
	clock := apptest.NewClock(time.Now())
	e.App.SetClock(clock.Now)
	root := e.Root()
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"app_id": "wx1", "mch_id": "m1", "api_key": "sekrit"}})
	enableBank(root)
	topupOn(root)
	return e, wallet, clock
}

// buyPlan has u buy plan id in stack mode, paid through the wallet's
// notification, and answers the order.
func buyPlan(t *testing.T, e *apptest.Env, u *apptest.Client, id int64) planOrderAnswer {
	t.Helper()
	o := planOrder(t, u, map[string]any{"plan_id": id, "mode": "stack", "pay_method": "mobile_a"})
	if got := sendNotify(t, e, "mobile_a", o.OrderNo, int64(o.Amount*100+0.5), "sekrit"); got != "SUCCESS" {
		t.Fatalf("pay %s: %q", o.OrderNo, got)
	}
	return o
}

func activeSubs(t *testing.T, e *apptest.Env, uid int64) []store.UserPlan {
	t.Helper()
	subs, err := e.App.Store.ActiveUserPlans(context.Background(), uid, e.App.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

// planSeconds is the plan time u holds from now on, over its active
// subscriptions.
func planSeconds(t *testing.T, e *apptest.Env, uid int64) int64 {
	var s int64
	now := e.App.Now().Unix()
	for _, p := range activeSubs(t, e, uid) {
		s += p.EndTime - now
	}
	return s
}

// TestUpgradesCannotBuyMoreThanPaid is the first case: plan X
// (100 CNY, 30 days) bought, then three price_diff orders for Y (200)
// before paying any. Each new one cancels the one before; paying all
// three activates one Y for 100 (200 − 100 unused), and the others are
// refused. Concurrent creations leave at most one pending upgrade, and
// an upgrade whose subscription ran out or whose price rose is refused
// at activation.
func TestUpgradesCannotBuyMoreThanPaid(t *testing.T) {
	apptest.Parallel(t)
	e, _, clock := commerceEnv(t)
	root := e.Root()
	x := createPlan(t, root, planBody("X", "price", 100, "duration_days", 30))
	y := createPlan(t, root, planBody("Y", "price", 200, "duration_days", 30))
	u, uid := e.NewUser("upgrader", user.RoleUser)
	buyPlan(t, e, u, x.ID)

	var ups []planOrderAnswer
	for range 3 {
		ups = append(ups, planOrder(t, u, map[string]any{"plan_id": y.ID, "mode": "price_diff", "pay_method": "mobile_a"}))
	}
	for i, o := range ups {
		if o.Amount != 100 {
			t.Fatalf("upgrade %d costs %v, want 200 − 100 = 100", i, o.Amount)
		}
		want := 2
		if i == 2 {
			want = 0
		}
		if got := getOrder(t, root, o.ID); got.Status != want {
			t.Fatalf("upgrade %d: status %d, want %d (a new upgrade cancels the pending one)", i, got.Status, want)
		}
	}
	replies := map[string]int{}
	for _, o := range ups {
		replies[sendNotify(t, e, "mobile_a", o.OrderNo, 10000, "sekrit")]++
	}
	if replies["SUCCESS"] != 3 {
		t.Fatalf("replies %v: want success for all (two as payment exceptions)", replies)
	}
	for _, o := range ups[:2] {
		if ex := exceptionsOf(t, root, o.OrderNo); len(ex) != 1 || ex[0].Reason != "cancelled" || ex[0].Amount != 100 {
			t.Fatalf("superseded upgrade %s paid: exceptions %+v, want one", o.OrderNo, ex)
		}
	}
	subs := activeSubs(t, e, uid)
	if len(subs) != 1 || subs[0].PlanID != y.ID || subs[0].OrderID != ups[2].ID {
		t.Fatalf("after paying three upgrades: %+v", subs)
	}

	// Concurrent upgrade orders from one subscription: one stays pending.
	v, vid := e.NewUser("racer", user.RoleUser)
	buyPlan(t, e, v, x.ID)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.OK("POST", "/api/order/plan", map[string]any{"plan_id": y.ID, "mode": "price_diff"})
		}()
	}
	wg.Wait()
	pending := 0
	var orders []orderInfo
	root.OK("GET", apptest.Path("/api/order/?user_id=%d&status=0", vid), nil).Decode(t, &orders)
	pending = len(orders)
	if pending != 1 {
		t.Fatalf("%d pending upgrades of one subscription after concurrent orders, want 1", pending)
	}
	// Paid concurrently with the admin marking and the test pay: one
	// subscription, of 30 days.
	var wg2 sync.WaitGroup
	for i := range 10 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			if i%2 == 0 {
				root.Do("POST", apptest.Path("/api/order/%d/test_pay", orders[0].ID), nil)
			} else {
				sendNotify(t, e, "mobile_a", orders[0].OrderNo, 10000, "sekrit")
			}
		}()
	}
	wg2.Wait()
	if got := planSeconds(t, e, vid); got != 30*86400 {
		t.Fatalf("plan time %d s after concurrent payments, want 30 days", got)
	}

	// Created while X was fresh, paid after X ran out: not activated; the
	// admin's marking is refused with the reason.
	w, wid := e.NewUser("late", user.RoleUser)
	buyPlan(t, e, w, x.ID)
	late := planOrder(t, w, map[string]any{"plan_id": y.ID, "mode": "price_diff", "pay_method": "mobile_a"})
	clock.Advance(31 * 24 * time.Hour)
	if got := sendNotify(t, e, "mobile_a", late.OrderNo, 10000, "sekrit"); got != "SUCCESS" {
		t.Fatalf("late upgrade payment: %q (a payment exception answers success)", got)
	}
	if ex := exceptionsOf(t, root, late.OrderNo); len(ex) != 1 || ex[0].Reason != "replaced_inactive" {
		t.Fatalf("late upgrade payment: exceptions %+v", ex)
	}
	root.Fail("PUT", apptest.Path("/api/order/%d", late.ID), map[string]any{"status": 1, "pay_method": "bank"}, http.StatusOK,
		"升级订单不能激活:被替换的订阅已不再有效")
	root.Fail("POST", apptest.Path("/api/order/%d/test_pay", late.ID), nil, http.StatusOK, "升级订单不能激活:被替换的订阅已不再有效")
	if got := getOrder(t, root, late.ID); got.Status != 0 || got.PayTime != 0 {
		t.Fatalf("refused upgrade order changed: %+v", got)
	}
	if n := len(activeSubs(t, e, wid)); n != 0 {
		t.Fatalf("late upgrade activated %d subscriptions", n)
	}

	// Priced with 30 of 30 days left (100), paid with 20 left: 200 −
	// 100 × 20/30 = 133.33 is due, more than 100 + 0.01.
	z, zid := e.NewUser("slow", user.RoleUser)
	buyPlan(t, e, z, x.ID)
	slow := planOrder(t, z, map[string]any{"plan_id": y.ID, "mode": "price_diff"})
	clock.Advance(10 * 24 * time.Hour)
	root.Fail("PUT", apptest.Path("/api/order/%d", slow.ID), map[string]any{"status": 1, "pay_method": "bank"}, http.StatusOK,
		"升级订单不能激活:按现在的剩余时间,升级价格为 133.33 元,高于订单金额 100.00 元")
	if subs := activeSubs(t, e, zid); len(subs) != 1 || subs[0].PlanID != x.ID {
		t.Fatalf("repriced upgrade changed the subscriptions: %+v", subs)
	}
}

// TestUpgradeDiscountFollowsAmountPaid: the discount is the unused share
// of what was paid for the replaced subscription, not of its plan's price.
func TestUpgradeDiscountFollowsAmountPaid(t *testing.T) {
	apptest.Parallel(t)
	e, _, clock := commerceEnv(t)
	root := e.Root()
	x := createPlan(t, root, planBody("X", "price", 100, "duration_days", 30))
	y := createPlan(t, root, planBody("Y", "price", 200, "duration_days", 30))
	big := createPlan(t, root, planBody("Big", "price", 400, "duration_days", 30))
	upgradeCost := func(u *apptest.Client, plan int64) float64 {
		t.Helper()
		return planOrder(t, u, map[string]any{"plan_id": plan, "mode": "price_diff"}).Amount
	}

	// An admin-granted X was not paid: Y costs its full price.
	g, gid := e.NewUser("granted", user.RoleUser)
	root.OK("POST", "/api/subscription/", map[string]any{"user_id": gid, "plan_id": x.ID, "duration_days": 30})
	if got := upgradeCost(g, y.ID); got != 200 {
		t.Fatalf("upgrade from a granted plan costs %v, want 200", got)
	}

	// Paid 100 for X; X's price then raised to 350: a 400 plan costs
	// 400 − 100, not 400 − 350.
	p, _ := e.NewUser("paid", user.RoleUser)
	buyPlan(t, e, p, x.ID)
	root.OK("PUT", "/api/plan/", map[string]any{"id": x.ID, "price": 350})
	if got := upgradeCost(p, big.ID); got != 300 {
		t.Fatalf("upgrade after the old plan's price rose costs %v, want 300", got)
	}
	// A third of the time used: 400 − 100 × 20/30 = 333.33.
	clock.Advance(10 * 24 * time.Hour)
	if got := upgradeCost(p, big.ID); got != 333.33 {
		t.Fatalf("upgrade with 20 of 30 days left costs %v, want 333.33", got)
	}

	// Refunded: nothing left to discount.
	r, _ := e.NewUser("refunded", user.RoleUser)
	o := buyPlan(t, e, r, x.ID)
	root.OK("PUT", apptest.Path("/api/order/%d", o.ID), map[string]any{"status": 3})
	if got := upgradeCost(r, big.ID); got != 400 {
		t.Fatalf("upgrade from a refunded order costs %v, want 400", got)
	}

	// Marked paid with pay_method free: nothing was paid.
	f, _ := e.NewUser("freebie", user.RoleUser)
	fo := planOrder(t, f, map[string]any{"plan_id": x.ID, "mode": "stack"})
	root.OK("PUT", apptest.Path("/api/order/%d", fo.ID), map[string]any{"status": 1, "pay_method": "free"})
	if got := upgradeCost(f, big.ID); got != 400 {
		t.Fatalf("upgrade from a free order costs %v, want 400", got)
	}
}

// TestZeroAmountOrderActiveAtOnce: a free plan, and an upgrade to a plan
// that costs less than the unused value, are active at creation with no
// payment step; a price that is not whole fen is refused on save.
func TestZeroAmountOrderActiveAtOnce(t *testing.T) {
	apptest.Parallel(t)
	e, wallet, _ := commerceEnv(t)
	root := e.Root()
	free := createPlan(t, root, planBody("Free", "price", 0, "duration_days", 7))
	x := createPlan(t, root, planBody("X", "price", 100, "duration_days", 30))
	small := createPlan(t, root, planBody("Small", "price", 20, "duration_days", 30))
	root.Fail("POST", "/api/plan/", planBody("odd", "price", 1.234), http.StatusOK, "套餐价格必须是整分(最多两位小数)")
	root.Fail("PUT", "/api/plan/", map[string]any{"id": x.ID, "price": 0.005}, http.StatusOK, "套餐价格必须是整分(最多两位小数)")
	u, uid := e.NewUser("zero", user.RoleUser)

	before := wallet.prepays.Load()
	o := planOrder(t, u, map[string]any{"plan_id": free.ID, "mode": "stack", "pay_method": "mobile_a"})
	if o.Status != 1 || o.PayStatus != 1 || o.PayMethod != "free" || o.Amount != 0 || o.Pay != nil || o.PayTime == 0 {
		t.Fatalf("free plan order: %+v", o)
	}
	if wallet.prepays.Load() != before {
		t.Fatal("a zero-amount order called the provider")
	}
	if subs := activeSubs(t, e, uid); len(subs) != 1 || subs[0].OrderID != o.ID {
		t.Fatalf("free plan: %+v", subs)
	}

	v, vid := e.NewUser("downgrader", user.RoleUser)
	old := buyPlan(t, e, v, x.ID)
	down := planOrder(t, v, map[string]any{"plan_id": small.ID, "mode": "price_diff", "pay_method": "mobile_a"})
	if down.Status != 1 || down.Amount != 0 || down.PayMethod != "free" {
		t.Fatalf("upgrade to a cheaper plan: %+v", down)
	}
	if subs := activeSubs(t, e, vid); len(subs) != 1 || subs[0].PlanID != small.ID || subs[0].OrderID == old.ID {
		t.Fatalf("after the zero-amount upgrade: %+v", subs)
	}
}

// TestPendingOrderLimit: MaxPendingOrders counts top-up and plan orders
// together; one more is refused before any provider call, also when many
// arrive at once; paying or cancelling frees a place.
func TestPendingOrderLimit(t *testing.T) {
	apptest.Parallel(t)
	e, wallet, _ := commerceEnv(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "MaxPendingOrders", "value": "3"})
	x := createPlan(t, root, planBody("X", "price", 100, "duration_days", 30))
	u, uid := e.NewUser("hoarder", user.RoleUser)
	a := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "mobile_a"})
	topup(t, u, map[string]any{"amount": 3, "pay_method": "mobile_a"})
	planOrder(t, u, map[string]any{"plan_id": x.ID, "mode": "stack", "pay_method": "mobile_a"})
	before := wallet.prepays.Load()
	const refusal = "待支付订单已达上限 3 个,请先支付或取消已有的订单"
	u.Fail("POST", "/api/topup/order", map[string]any{"amount": 3, "pay_method": "mobile_a"}, http.StatusOK, refusal)
	u.Fail("POST", "/api/order/plan", map[string]any{"plan_id": x.ID, "mode": "stack", "pay_method": "mobile_a"}, http.StatusOK, refusal)
	if wallet.prepays.Load() != before {
		t.Fatal("a refused order called the provider")
	}
	u.OK("POST", apptest.Path("/api/order/self/%d/cancel", a.Order.ID), nil)
	topup(t, u, map[string]any{"amount": 3, "pay_method": "mobile_a"})

	// 60 at once from a fresh user: exactly 3 are created.
	v, vid := e.NewUser("burst", user.RoleUser)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := v.Do("POST", "/api/topup/order", map[string]any{"amount": 1, "pay_method": "bank"})
			mu.Lock()
			codes[fmt.Sprintf("%d %v %s", r.Status, r.Success, r.Message)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := root.OK("GET", apptest.Path("/api/order/?user_id=%d&status=0", vid), nil).Total; n != 3 {
		t.Fatalf("%d pending orders after 60 concurrent top-ups (answers %v), want 3", n, codes)
	}
	if codes["200 true "] != 3 || codes["200 false "+refusal] != 57 {
		t.Fatalf("answers %v", codes)
	}
	_ = uid
}
