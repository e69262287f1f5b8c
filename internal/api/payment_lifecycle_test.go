package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/alipay"
	"github.com/modelgate/modelgate/internal/payment/paytest"
	"github.com/modelgate/modelgate/internal/payment/wechat"
	"github.com/modelgate/modelgate/internal/user"
)

// walletEnv is an app whose wallets are the paytest fakes (their real
// protocols, keys made by the test), both channels and top-up on, and the
// app clock under the test's control.
type walletEnv struct {
	*apptest.Env
	wf    *paytest.Wechat
	af    *paytest.Alipay
	clock *apptest.Clock
	root  *apptest.Client
}

func newWalletEnv(t *testing.T) *walletEnv {
	t.Helper()
	wf, af := paytest.NewWechat(t), paytest.NewAlipay(t)
	providers := map[string]payment.Provider{
		payment.MethodWechat: wechat.New(wf.Client()),
		payment.MethodAlipay: alipay.New(af.Client()),
	}
	e := apptest.NewWith(t, []app.Option{app.WithPaymentProviders(providers)})
	clock := apptest.NewClock(time.Now())
	e.App.SetClock(clock.Now)
	root := e.Root()
	notify := func(method string) string { return e.Server.URL + "/api/payment/" + method + "/notify" }
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": wf.Config(notify("mobile_a"))})
	root.OK("PUT", "/api/setting/payment/mobile_b", map[string]any{"enabled": true, "config": af.Config(notify("mobile_b"))})
	topupOn(root)
	return &walletEnv{Env: e, wf: wf, af: af, clock: clock, root: root}
}

// pay pays order no at the method's fake and answers the notification.
func (w *walletEnv) pay(t *testing.T, method, no string) (body, ctype string) {
	if method == payment.MethodWechat {
		return w.wf.Pay(t, no), "text/xml"
	}
	return w.af.Pay(t, no), "application/x-www-form-urlencoded"
}

// refunds counts the refunds the method's fake made for order no.
func (w *walletEnv) refunds(method, no string) int {
	if method == payment.MethodWechat {
		return len(w.wf.Refunds(no))
	}
	return len(w.af.Refunds(no))
}

func (w *walletEnv) sweep(t *testing.T) (expired, recovered int) {
	t.Helper()
	expired, recovered, err := w.App.SweepOrders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return expired, recovered
}

type exceptionInfo struct {
	ID            int64   `json:"id"`
	OrderID       int64   `json:"order_id"`
	OrderNo       string  `json:"order_no"`
	Amount        float64 `json:"amount"`
	PayMethod     string  `json:"pay_method"`
	TradeNo       string  `json:"trade_no"`
	Reason        string  `json:"reason"`
	Status        string  `json:"status"`
	Note          string  `json:"note"`
	RefundNo      string  `json:"refund_no"`
	RefundOutcome string  `json:"refund_outcome"`
}

// exceptionsOf lists the payment exceptions of order no (Admin route).
func exceptionsOf(t *testing.T, c *apptest.Client, no string) []exceptionInfo {
	t.Helper()
	var list struct {
		Data  []exceptionInfo `json:"data"`
		Total int64           `json:"total"`
	}
	if err := json.Unmarshal(c.OK("GET", "/api/payment/exceptions?p=0&page_size=100", nil).Raw, &list); err != nil {
		t.Fatal(err)
	}
	var out []exceptionInfo
	for _, e := range list.Data {
		if e.OrderNo == no {
			out = append(out, e)
		}
	}
	return out
}

func allSuccess(t *testing.T, what string, replies []string) {
	t.Helper()
	for i, r := range replies {
		if !strings.Contains(strings.ToLower(r), "success") {
			t.Fatalf("%s: delivery %d answered %q, want success (the provider must stop retrying)", what, i, r)
		}
	}
}

// An order older than OrderExpiryMinutes is cancelled by the sweeper and
// its trade closed at the provider; a younger one is left alone.
func TestOrderExpiresAndIsClosedAtProvider(t *testing.T) {
	apptest.Parallel(t)
	w := newWalletEnv(t)
	w.root.OK("PUT", "/api/option/", map[string]any{"key": "OrderExpiryMinutes", "value": "30"})
	u, _ := w.NewUser("expirer", user.RoleUser)
	wo := topup(t, u, map[string]any{"amount": 5, "pay_method": "mobile_a"}).Order
	ao := topup(t, u, map[string]any{"amount": 6, "pay_method": "mobile_b"}).Order
	w.af.SetStatus(ao.OrderNo, "WAIT_BUYER_PAY") // scanned, not paid: Alipay holds a trade

	w.clock.Advance(29 * time.Minute)
	if n, _ := w.sweep(t); n != 0 {
		t.Fatalf("expired %d orders younger than the expiry", n)
	}
	if got := getOrder(t, w.root, wo.ID); got.Status != 0 {
		t.Fatalf("young order status %d", got.Status)
	}
	// Paid between two sweeps, its notification lost: the expiry's close
	// answers "paid", and the payment is applied instead.
	u2, uid2 := w.NewUser("payslate", user.RoleUser)
	w.clock.Advance(-29 * time.Minute)
	po := topup(t, u2, map[string]any{"amount": 8, "pay_method": "mobile_a"}).Order
	w.clock.Advance(29 * time.Minute)
	w.wf.Pay(t, po.OrderNo)
	w.clock.Advance(2 * time.Minute)
	if n, rec := w.sweep(t); n != 2 || rec != 1 {
		t.Fatalf("expired %d orders and applied %d, want 2 and 1", n, rec)
	}
	if got := getOrder(t, w.root, po.ID); got.Status != 1 || balanceOf(t, w.root, uid2) < 8_000_000 {
		t.Fatalf("order paid before its expiry: status %d, balance %d", got.Status, balanceOf(t, w.root, uid2))
	}
	for _, id := range []int64{wo.ID, ao.ID} {
		if got := getOrder(t, w.root, id); got.Status != 2 {
			t.Fatalf("order %d status %d after expiry, want 2", id, got.Status)
		}
	}
	if tr, _ := w.wf.Trade(wo.OrderNo); tr.State != "CLOSED" {
		t.Fatalf("wechat trade %+v: want CLOSED", tr)
	}
	if tr, _ := w.af.Trade(ao.OrderNo); tr.Status != "TRADE_CLOSED" {
		t.Fatalf("alipay trade %+v: want TRADE_CLOSED", tr)
	}
	if n, _ := w.sweep(t); n != 0 {
		t.Fatalf("second sweep expired %d", n)
	}
}

// A payment whose notification never arrives is found by the reconciler's
// query at the growing intervals and credited once.
func TestLostNotificationRecoveredByQuery(t *testing.T) {
	apptest.Parallel(t)
	w := newWalletEnv(t)
	u, uid := w.NewUser("lost", user.RoleUser)
	for _, method := range []string{payment.MethodWechat, payment.MethodAlipay} {
		o := topup(t, u, map[string]any{"amount": 2.5, "pay_method": method}).Order
		before := balanceOf(t, w.root, uid)
		w.pay(t, method, o.OrderNo) // the notification is lost
		queries := func() int {
			if method == payment.MethodWechat {
				return w.wf.Calls("/pay/orderquery")
			}
			return w.af.Calls("alipay.trade.query")
		}
		q0 := queries()
		w.clock.Advance(30 * time.Second)
		w.sweep(t)
		if queries() != q0 || balanceOf(t, w.root, uid) != before {
			t.Fatalf("%s: queried before the first minute", method)
		}
		w.clock.Advance(31 * time.Second)
		if _, rec := w.sweep(t); rec != 1 {
			t.Fatalf("%s: recovered %d, want 1", method, rec)
		}
		if got := balanceOf(t, w.root, uid); got != before+2_500_000 {
			t.Fatalf("%s: balance %d, want %d + 2,500,000", method, got, before)
		}
		if got := getOrder(t, w.root, o.ID); got.Status != 1 {
			t.Fatalf("%s: order status %d", method, got.Status)
		}
		// The late notification now is a repeat: success, nothing more.
		body, ctype := w.pay(t, method, o.OrderNo)
		allSuccess(t, method, postNotify(t, w.Env, method, ctype, body, 5))
		w.clock.Advance(10 * time.Minute)
		w.sweep(t)
		if got := balanceOf(t, w.root, uid); got != before+2_500_000 || len(exceptionsOf(t, w.root, o.OrderNo)) != 0 {
			t.Fatalf("%s: balance %d after repeats, or an exception recorded", method, got)
		}
	}
}

// A payment after a cancel is a payment exception, refunded at the
// provider once however many notifications arrive at once; the admin
// resolves it with a note.
func TestPaymentAfterCancelIsRefundedException(t *testing.T) {
	apptest.Parallel(t)
	w := newWalletEnv(t)
	u, uid := w.NewUser("canceller", user.RoleUser)
	for _, method := range []string{payment.MethodWechat, payment.MethodAlipay} {
		o := topup(t, u, map[string]any{"amount": 3, "pay_method": method}).Order
		u.OK("POST", apptest.Path("/api/order/self/%d/cancel", o.ID), nil)
		if method == payment.MethodWechat {
			if tr, _ := w.wf.Trade(o.OrderNo); tr.State != "CLOSED" {
				t.Fatalf("cancel did not close the wechat trade: %+v", tr)
			}
		} else if w.af.Calls("alipay.trade.close") != 1 {
			t.Fatalf("cancel asked alipay to close %d times", w.af.Calls("alipay.trade.close"))
		}
		before := balanceOf(t, w.root, uid)
		// Paid anyway (a code scanned before the close reached the
		// provider): 20 deliveries at once.
		body, ctype := w.pay(t, method, o.OrderNo)
		allSuccess(t, method, postNotify(t, w.Env, method, ctype, body, 20))
		if got := balanceOf(t, w.root, uid); got != before {
			t.Fatalf("%s: cancelled order credited: %d → %d", method, before, got)
		}
		ex := exceptionsOf(t, w.root, o.OrderNo)
		if len(ex) != 1 || ex[0].Reason != "cancelled" || ex[0].Status != "refunded" || ex[0].Amount != 3 ||
			ex[0].PayMethod != method || ex[0].TradeNo == "" || ex[0].OrderID != o.ID || ex[0].RefundNo == "" {
			t.Fatalf("%s: exceptions %+v, want one refunded", method, ex)
		}
		if n := w.refunds(method, o.OrderNo); n != 1 {
			t.Fatalf("%s: %d refunds at the provider, want 1", method, n)
		}
		if got := getOrder(t, w.root, o.ID); got.Status != 2 {
			t.Fatalf("%s: order status %d", method, got.Status)
		}
		// The reconciler's query of the same payment adds nothing.
		w.clock.Advance(time.Hour)
		w.sweep(t)
		if len(exceptionsOf(t, w.root, o.OrderNo)) != 1 || w.refunds(method, o.OrderNo) != 1 {
			t.Fatalf("%s: sweep doubled the exception or refund", method)
		}
		w.root.Fail("PUT", apptest.Path("/api/payment/exceptions/%d", ex[0].ID), map[string]any{"status": "resolved"}, http.StatusOK, "请填写处理说明 note")
		r := apptest.OKData[exceptionInfo](w.root, "PUT", apptest.Path("/api/payment/exceptions/%d", ex[0].ID),
			map[string]any{"status": "resolved", "note": "refunded by the provider, told the user"})
		if r.Status != "resolved" || r.Note == "" {
			t.Fatalf("resolve answered %+v", r)
		}
	}
	u.Fail("GET", "/api/payment/exceptions", nil, http.StatusOK, "无权进行此操作,权限不足")
	w.root.Fail("PUT", "/api/payment/exceptions/999999", map[string]any{"status": "resolved", "note": "x"}, http.StatusOK, "支付异常记录不存在")
	w.root.Fail("GET", "/api/payment/exceptions?status=bogus", nil, http.StatusOK, "status 只能是 open、refunded、refund_failed 或 resolved")
}

// An upgrade paid after the plan it replaces ended is not activated: an
// exception, refunded at the provider. Paying both codes after a re-pay
// switch: the second payment is an exception, refunded.
func TestLateUpgradeAndSecondWalletAreRefundedExceptions(t *testing.T) {
	apptest.Parallel(t)
	w := newWalletEnv(t)
	x := createPlan(t, w.root, planBody("X", "price", 100, "duration_days", 30))
	y := createPlan(t, w.root, planBody("Y", "price", 200, "duration_days", 30))
	u, uid := w.NewUser("lateup", user.RoleUser)
	bx := planOrder(t, u, map[string]any{"plan_id": x.ID, "mode": "stack", "pay_method": "mobile_a"})
	body, ctype := w.pay(t, "mobile_a", bx.OrderNo)
	allSuccess(t, "buy X", postNotify(t, w.Env, "mobile_a", ctype, body, 1))
	up := planOrder(t, u, map[string]any{"plan_id": y.ID, "mode": "price_diff", "pay_method": "mobile_a"})
	w.clock.Advance(31 * 24 * time.Hour)
	body, ctype = w.pay(t, "mobile_a", up.OrderNo)
	allSuccess(t, "late upgrade", postNotify(t, w.Env, "mobile_a", ctype, body, 5))
	ex := exceptionsOf(t, w.root, up.OrderNo)
	if len(ex) != 1 || ex[0].Reason != "replaced_inactive" || ex[0].Status != "refunded" || ex[0].Amount != up.Amount {
		t.Fatalf("late upgrade exceptions %+v", ex)
	}
	if w.refunds("mobile_a", up.OrderNo) != 1 {
		t.Fatalf("late upgrade refunds %d", w.refunds("mobile_a", up.OrderNo))
	}
	if len(activeSubs(t, w.Env, uid)) != 0 {
		t.Fatalf("late upgrade activated: %+v", activeSubs(t, w.Env, uid))
	}

	o := topup(t, u, map[string]any{"amount": 4, "pay_method": "mobile_a"}).Order
	u.OK("POST", apptest.Path("/api/order/self/%d/pay", o.ID), map[string]any{"pay_method": "mobile_b"})
	before := balanceOf(t, w.root, uid)
	body, ctype = w.pay(t, "mobile_b", o.OrderNo)
	allSuccess(t, "alipay", postNotify(t, w.Env, "mobile_b", ctype, body, 1))
	body, ctype = w.pay(t, "mobile_a", o.OrderNo)
	allSuccess(t, "wechat second", postNotify(t, w.Env, "mobile_a", ctype, body, 3))
	if got := balanceOf(t, w.root, uid); got != before+4_000_000 {
		t.Fatalf("balance %d, want %d + 4,000,000 once", got, before)
	}
	ex = exceptionsOf(t, w.root, o.OrderNo)
	if len(ex) != 1 || ex[0].PayMethod != "mobile_a" || ex[0].Reason != "paid_other_trade" || ex[0].Status != "refunded" {
		t.Fatalf("second wallet exceptions %+v", ex)
	}
	if w.refunds("mobile_a", o.OrderNo) != 1 || w.refunds("mobile_b", o.OrderNo) != 0 {
		t.Fatalf("refunds wechat %d alipay %d", w.refunds("mobile_a", o.OrderNo), w.refunds("mobile_b", o.OrderNo))
	}
}

// PUT /api/order/:id status 3 with refund_via_provider refunds at the
// provider once and records the outcome; without it, a status flip only.
func TestRefundViaProvider(t *testing.T) {
	apptest.Parallel(t)
	w := newWalletEnv(t)
	u, _ := w.NewUser("refundee", user.RoleUser)
	o := topup(t, u, map[string]any{"amount": 7, "pay_method": "mobile_b"}).Order
	body, ctype := w.pay(t, "mobile_b", o.OrderNo)
	allSuccess(t, "pay", postNotify(t, w.Env, "mobile_b", ctype, body, 1))
	w.root.Fail("PUT", apptest.Path("/api/order/%d", o.ID), map[string]any{"status": 1, "refund_via_provider": true}, http.StatusOK,
		"refund_via_provider 只能与 status 3(已退款)一起使用")
	type answer struct {
		orderInfo
		Refund *exceptionInfo `json:"refund"`
	}
	for range 2 {
		a := apptest.OKData[answer](w.root, "PUT", apptest.Path("/api/order/%d", o.ID), map[string]any{"status": 3, "refund_via_provider": true})
		if a.Status != 3 || a.Refund == nil || a.Refund.Status != "refunded" || a.Refund.Reason != "admin_refund" {
			t.Fatalf("answer %+v refund %+v", a.orderInfo, a.Refund)
		}
	}
	if n := w.refunds("mobile_b", o.OrderNo); n != 1 {
		t.Fatalf("%d refunds at the provider, want 1", n)
	}
	bank := topup(t, u, map[string]any{"amount": 1, "pay_method": "mobile_a"}).Order
	w.root.OK("PUT", apptest.Path("/api/order/%d", bank.ID), map[string]any{"status": 1, "pay_method": "offline"})
	w.root.Fail("PUT", apptest.Path("/api/order/%d", bank.ID), map[string]any{"status": 3, "refund_via_provider": true}, http.StatusOK,
		"该订单没有微信或支付宝的支付记录,无法原路退款")
	if got := getOrder(t, w.root, bank.ID); got.Status != 1 {
		t.Fatalf("refused provider refund changed the order: %d", got.Status)
	}
}
