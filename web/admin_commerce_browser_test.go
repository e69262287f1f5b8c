package web_test

import (
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

type planRow struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	ModelLimits  string `json:"model_limits"`
	DefaultModel string `json:"default_model"`
}

type subRow struct {
	ID       int64  `json:"id"`
	PlanName string `json:"plan_name"`
	OrderID  int64  `json:"order_id"`
	Status   int    `json:"status"`
}

// Root creates a plan through the plans page with two model limit rows (a
// third added and removed), and the API stores exactly those limits; a
// user's bank order is marked paid on the orders page with a trade number,
// which starts the subscription the subscriptions page then lists; the
// plan cannot be deleted while it is in use (the server's message is
// shown); diagnostics list the subscription; every page has its Chinese
// labels.
func TestBrowserRootManagesPlansOrdersAndSubscriptions(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()
	enableBank(root)
	bob, bobID := e.NewUser("bob", 1)

	p.login(e.Server.URL, "root", apptest.RootPassword)
	// The pages ask before deleting, refunding or cancelling; the test says yes.
	eval[bool](p, `(window.confirm = () => true, true)`)
	p.click(`#nav-admin a[href="/admin/plans"]`)
	p.waitText("h1", "Manage plans")
	p.click("#plan-new")
	p.waitText("#planform-title", "Create a plan")
	p.fill(`#plan-form input[name="name"]`, "Browser plan")
	p.fill(`#plan-form input[name="price"]`, "20")
	p.fill(`#plan-form input[name="duration_days"]`, "30")
	for range 3 {
		p.click("#plan-add-row")
	}
	row := func(n int, field string) string {
		return `#plan-limits tbody tr:nth-child(` + string(rune('0'+n)) + `) input[name="` + field + `"]`
	}
	p.fill(row(1, "model"), "model-a")
	p.fill(row(1, "request_period"), "10")
	p.fill(row(2, "model"), "model-x")
	p.fill(row(3, "model"), "model-b")
	p.fill(row(3, "period_h"), "3")
	p.fill(row(3, "token_week"), "5000")
	p.click(`#plan-limits tbody tr:nth-child(2) button.remove-row`) // model-x goes
	if got := eval[string](p, `document.querySelector('`+row(2, "model")+`').value`); got != "model-b" {
		t.Fatalf("after removing row 2, row 2 holds %q, want model-b", got)
	}
	p.choose(`#plan-form select[name="default_model"]`, "model-b")
	p.fill(`#plan-form textarea[name="features"]`, "fast")
	p.screenshot("admin-plan-form")
	p.click(`#plan-form button[type="submit"]`)
	p.waitText("#toasts", "Plan Browser plan saved.")
	p.waitText(`tr.saved[data-plan="Browser plan"]`, "Browser plan")
	p.waitText(`tr[data-plan="Browser plan"] .limits`, "model-a, model-b")

	plans := apptest.OKData[[]planRow](root, "GET", "/api/plan/", nil)
	if len(plans) != 1 {
		t.Fatalf("plans = %+v", plans)
	}
	plan := plans[0]
	const want = `{"model-a":{"period_h":5,"request_period":10},"model-b":{"period_h":3,"token_week":5000}}`
	if plan.ModelLimits != want || plan.DefaultModel != "model-b" {
		t.Errorf("stored plan: limits %s default %q; want %s and model-b", plan.ModelLimits, plan.DefaultModel, want)
	}

	// Editing shows the rows back.
	p.click(`tr[data-plan="Browser plan"] button.edit`)
	p.waitText("#planform-title", "Edit the plan")
	if got := eval[string](p, `document.querySelector('`+row(2, "token_week")+`').value`); got != "5000" {
		t.Errorf("edit form's model-b token_week = %q, want 5000", got)
	}
	p.click(`#plan-form button[type="button"]:not(.remove-row):not(#plan-add-row)`)

	// The user orders the plan by bank transfer (API); root marks it paid.
	order := apptest.OKData[orderRow](bob, "POST", "/api/order/plan", map[string]any{"plan_id": plan.ID, "mode": "stack", "pay_method": "bank"})
	p.click(`#nav-admin a[href="/admin/orders"]`)
	p.waitText("h1", "All orders")
	p.fill(`#order-filters input[name="keyword"]`, order.OrderNo)
	p.click(`#order-filters button[type="submit"]`)
	sel := `tr[data-order="` + order.OrderNo + `"]`
	p.waitText(sel, "Pending")
	p.click(sel + " button.mark-paid")
	p.waitText("#markpaid-title", order.OrderNo)
	p.choose(`#mark-paid select[name="pay_method"]`, "bank")
	p.fill(`#mark-paid input[name="pay_trade_no"]`, "BANK-77")
	p.click(`#mark-paid button[type="submit"]`)
	p.waitText(sel, "Paid")
	p.waitText(sel, "BANK-77")
	p.screenshot("admin-orders-paid")

	subs := apptest.OKData[[]subRow](bob, "GET", "/api/subscription/self", nil)
	if len(subs) != 1 || subs[0].PlanName != "Browser plan" || subs[0].OrderID != order.ID {
		t.Fatalf("bob's subscriptions after marking paid: %+v", subs)
	}

	p.click(`#nav-admin a[href="/admin/subscriptions"]`)
	p.waitText("h1", "All subscriptions")
	p.waitText(`tr[data-user="bob"]`, "Browser plan")
	p.waitText(`tr[data-user="bob"]`, "Active")
	p.screenshot("admin-subscriptions")

	// A plan in use cannot be deleted: the server says why.
	p.click(`#nav-admin a[href="/admin/plans"]`)
	p.waitText(`tr[data-plan="Browser plan"]`, "Browser plan")
	p.click(`tr[data-plan="Browser plan"] button.danger`)
	p.waitText("[role=alert]", "the plan has active subscriptions")

	// Cancelled on the subscriptions page, the server agrees.
	p.click(`#nav-admin a[href="/admin/subscriptions"]`)
	p.click(`tr[data-user="bob"] button.cancel-sub`)
	p.waitText(`tr[data-user="bob"]`, "Cancelled")
	if got := apptest.OKData[subRow](root, "GET", apptest.Path("/api/subscription/%d", subs[0].ID), nil); got.Status != 3 {
		t.Errorf("subscription status after cancel = %d, want 3", got.Status)
	}

	// Granted to bob by hand for 7 days: no order, the plan's limits.
	p.click("#sub-new")
	p.waitText("#subform-title", "Grant a subscription")
	p.fill(`#sub-form input[name="user_id"]`, apptest.Path("%d", bobID))
	p.fill(`#sub-form input[name="duration_days"]`, "7")
	p.fill(`#sub-form textarea[name="notes"]`, "goodwill")
	p.click(`#sub-form button[type="submit"]`)
	p.waitText("#admin-subs", "goodwill")
	subs = apptest.OKData[[]subRow](bob, "GET", "/api/subscription/self", nil)
	if len(subs) != 1 || subs[0].OrderID != 0 || subs[0].PlanName != "Browser plan" {
		t.Errorf("bob's active subscriptions after the grant: %+v", subs)
	}

	p.click(`#nav-admin a[href="/admin/diag"]`)
	p.waitText("#diag-summary", "2 subscriptions checked")
	p.waitText("#diag-rows", "granted by an admin")
	p.waitText("#diag-rows", order.OrderNo)

	// Every commerce page in Chinese: no label missing.
	p.choose("#lang", "zh")
	for _, pg := range []struct{ path, h1 string }{
		{"/admin/plans", "套餐管理"}, {"/admin/orders", "订单管理"},
		{"/admin/subscriptions", "订阅管理"}, {"/admin/diag", "订阅诊断"},
	} {
		p.click(`#nav-admin a[href="` + pg.path + `"]`)
		p.waitText("h1", pg.h1)
	}
	p.click(`#nav-admin a[href="/admin/plans"]`)
	p.click("#plan-new")
	p.click("#plan-add-row")
	p.waitText("#plan-limits", "周期")
	p.click(`#nav-admin a[href="/admin/orders"]`)
	p.click(sel + " button.refund")
	p.waitText(sel, "已退款")
	p.click(`#nav-admin a[href="/admin/subscriptions"]`)
	p.click("#sub-new")
	p.waitText("#subform-title", "发放订阅")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
