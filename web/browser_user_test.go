package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// enableBank turns on the bank channel, as root would in the settings.
func enableBank(root *apptest.Client) {
	root.OK("PUT", "/api/setting/payment/bank", map[string]any{"enabled": true, "config": map[string]any{
		"account_name": "Example Ltd", "account_no": "6222 0000 1111", "bank_name": "ICBC", "branch": "Haidian",
		"notes": "put the order number in the remarks"}})
}

type orderRow struct {
	ID      int64   `json:"id"`
	OrderNo string  `json:"order_no"`
	Amount  float64 `json:"amount"`
	Status  int     `json:"status"`
	Type    int     `json:"type"`
}

func userOrders(t *testing.T, c *apptest.Client) []orderRow {
	t.Helper()
	return apptest.OKData[[]orderRow](c, "GET", "/api/order/self", nil)
}

// A user buys a plan with the bank channel, sees the amount and the bank's
// instructions; the admin marks the order paid; the subscription page then
// shows usage bars with the relay call counted, the logs page lists that
// call, and the orders page shows the order paid.
func TestBrowserUserBuysAPlanAndSeesUsageAndLogs(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "bob"})
	enableBank(g.Root)
	g.Root.OK("POST", "/api/plan/", map[string]any{"name": "Pro", "price": 30, "duration_days": 30, "status": 1,
		"model_limits": `{"gpt-test":{"period_h":5,"request_period":10,"token_week":100000}}`, "default_model": "gpt-test",
		"description": "for browser tests", "features": "fast\nsafe", "recommended": true})

	p.login(e.Server.URL, "bob", "password-bob")
	p.do("open the plans", chromedp.Click(chromedp.CSS(`#nav-user a[href="/plans"]`)))
	p.waitText("h1", "Plans")
	p.waitText(".plans", "Pro")
	p.waitText(".plans", "¥30.00")
	p.do("buy", chromedp.Click(chromedp.CSS(".plan button.primary")))
	p.waitText("#checkout", "How to buy")
	p.do("upgrade mode, create the order",
		chromedp.Click(chromedp.CSS("#mode-price_diff")),
		chromedp.Click(chromedp.CSS(`#checkout button[type="submit"]`)))
	// Without an active subscription price_diff costs the full price.
	p.waitText("#order-amount", "¥30.00")
	if got := eval[string](p, `document.querySelector('#plan-method').value`); got != "bank" {
		t.Errorf("payment method = %q, want bank (the only one enabled)", got)
	}
	p.do("pay", chromedp.Click(chromedp.CSS("#pay")))
	p.waitText("#pay-result", "Bank transfer instructions")
	p.waitText("#pay-result", "6222 0000 1111")
	p.screenshot("plans-bank")

	orders := userOrders(t, g.User)
	if len(orders) != 1 || orders[0].Status != 0 || orders[0].Amount != 30 {
		t.Fatalf("orders after buying: %+v", orders)
	}
	// The admin marks the transfer received.
	g.Root.OK("PUT", apptest.Path("/api/order/%d", orders[0].ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "BANK-42"})

	resp := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{
		"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if resp.Status != 200 {
		t.Fatalf("relay = %d %s", resp.Status, resp.Body)
	}
	// The subscription's use is committed shortly after the call (docs/api.md
	// Subscriptions); wait for the API to count it before looking.
	type usage struct {
		Models []struct {
			Limits []struct {
				Name string `json:"name"`
				Used int64  `json:"used"`
			} `json:"limits"`
		} `json:"models"`
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		subs := apptest.OKData[[]usage](g.User, "GET", "/api/subscription/self", nil)
		if len(subs) == 1 && len(subs[0].Models) == 1 && subs[0].Models[0].Limits[0].Used == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription never counted the call: %+v", subs)
		}
		time.Sleep(50 * time.Millisecond)
	}

	p.do("open the subscriptions", chromedp.Click(chromedp.CSS(`#nav-user a[href="/subscriptions"]`)))
	p.waitText("h1", "Subscriptions")
	p.waitText(".sub h2", "Pro")
	p.waitText(".sub", "gpt-test")
	p.waitText(".sub", "1 / 10 (10%)")
	p.waitText(".sub", "Tokens a week")
	if n := eval[int](p, `document.querySelectorAll('.sub meter').length`); n != 2 {
		t.Errorf("usage bars = %d, want 2 (requests per 5 h, tokens a week)", n)
	}
	if v := eval[float64](p, `document.querySelector('.sub meter').value`); v != 1 {
		t.Errorf("first bar's value = %v, want 1", v)
	}
	p.do("refresh", chromedp.Click(chromedp.CSS(".sub > button")))
	p.waitText(".sub", "1 / 10 (10%)")
	p.screenshot("subscriptions")

	p.do("open the logs", chromedp.Click(chromedp.CSS(`#nav-user a[href="/logs"]`)))
	p.waitText("h1", "Logs")
	p.waitText("#logs tbody", "gpt-test")
	p.waitText("#logs tbody", "relay")
	p.waitText("#logs tbody", "Usage")
	p.screenshot("logs")
	// A filter that matches nothing empties the list; clearing brings it back.
	p.do("filter",
		chromedp.SendKeys(chromedp.CSS(`#log-filters input[name="model_name"]`), "no-such-model"),
		chromedp.Click(chromedp.CSS(`#log-filters button[type="submit"]`)))
	p.waitText("#logs tbody", "Nothing here yet.")
	p.do("clear", chromedp.Click(chromedp.CSS(`#log-filters button[type="button"]`)))
	p.waitText("#logs tbody", "gpt-test")

	// With Pro active, an upgrade to Max costs Max's price minus what is
	// left of Pro (about all of its 30 CNY): the prorated amount shows before
	// paying, and the order can be cancelled there.
	g.Root.OK("POST", "/api/plan/", map[string]any{"name": "Max", "price": 60, "duration_days": 30, "status": 1, "sort": 1,
		"model_limits": `{"gpt-test":{"period_h":5,"request_period":100}}`})
	p.do("open the plans", chromedp.Click(chromedp.CSS(`#nav-user a[href="/plans"]`)))
	p.waitText(".plans", "Max")
	p.do("buy Max", chromedp.Click(chromedp.CSS(".plan:nth-child(2) button.primary")))
	p.waitText("#checkout-title", `Buy "Max"`)
	p.do("upgrade",
		chromedp.Click(chromedp.CSS("#mode-price_diff")),
		chromedp.Click(chromedp.CSS(`#checkout button[type="submit"]`)))
	p.waitText("#order-amount", "prorated from ¥60.00")
	amount := eval[string](p, `document.querySelector('#order-amount strong').innerText`)
	if amount != "¥30.00" && amount != "¥30.01" {
		t.Errorf("upgrade amount = %q, want about ¥30.00", amount)
	}
	p.screenshot("plans-prorated")
	p.do("cancel it", chromedp.Click(chromedp.CSS("#checkout button.danger")))
	p.waitText("#checkout", "Cancelled")

	p.do("open the orders", chromedp.Click(chromedp.CSS(`#nav-user a[href="/orders"]`)))
	p.waitText("#orders tbody", orders[0].OrderNo)
	p.waitText("#orders tbody tr:first-child", "Cancelled")
	p.waitText("#orders tbody", "Paid")
	p.waitText("#orders tbody", "Pro")
	p.screenshot("orders-paid")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// The top-up page offers the presets and a custom amount and creates
// orders paid by bank transfer; the orders page cancels one and pays the
// other again; a wallet's code_url is drawn as a QR code in the page.
func TestBrowserUserTopsUpAndManagesOrders(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()
	enableBank(root)
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 12_000_000}, {"amount": 50, "bonus_quota": 60_000_000}}})
	u, _ := e.NewUser("carol", 1)

	p.login(e.Server.URL, "carol", "password-carol")
	p.do("open top-up", chromedp.Click(chromedp.CSS(`#nav-user a[href="/topup"]`)))
	p.waitText("#topup-form", "¥10.00, credits ¥12.00")
	p.waitText("#topup-form", "¥50.00, credits ¥60.00")
	p.screenshot("topup")
	p.do("order the first preset", chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#topup-order", "Order for ¥10.00 created; it credits ¥12.00 once paid.")
	p.waitText("#pay-result", "6222 0000 1111")
	p.screenshot("topup-bank")

	p.do("a custom amount",
		chromedp.Click(chromedp.CSS("#preset-custom")),
		chromedp.SendKeys(chromedp.CSS(`input[name="custom_amount"]`), "5"))
	p.waitText("#topup-form", "Credits ¥5.00.")
	p.do("order it", chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#topup-order", "Order for ¥5.00 created")

	orders := userOrders(t, u)
	if len(orders) != 2 || orders[0].Amount != 5 || orders[1].Amount != 10 || orders[0].Type != 2 {
		t.Fatalf("orders: %+v", orders)
	}

	p.do("open the orders", chromedp.Click(chromedp.CSS(`#nav-user a[href="/orders"]`)))
	p.waitText("#orders tbody", orders[1].OrderNo)
	p.do("cancel the newest", chromedp.Click(chromedp.CSS(`#orders tbody tr:first-child button.danger`)))
	p.waitText("#orders tbody tr:first-child", "Cancelled")
	if got := userOrders(t, u)[0].Status; got != 2 {
		t.Errorf("cancelled order's status = %d, want 2", got)
	}
	p.do("pay the other again", chromedp.Click(chromedp.CSS(`#orders tbody tr:nth-child(2) .actions button`)))
	p.waitText("#repay", orders[1].OrderNo)
	p.do("pay", chromedp.Click(chromedp.CSS("#repay button.primary")))
	p.waitText("#repay #pay-result", "Bank transfer instructions")
	p.screenshot("orders-repay")

	// The wallets answer a code_url; the page draws it as a QR code itself
	// (vendored uqr), so the code is checked here without a wallet provider.
	size := eval[int](p, `Promise.all([import('/js/pages/pay.js'), import('preact'), import('/js/html.js')]).then(([pay, preact, h]) => {
		const d = document.createElement('div');
		document.querySelector('main').prepend(d);
		preact.render(h.html`+"`<${pay.PayResult} pay=${{ status: 'success', qr_code: 'weixin://wxpay/bizpayurl?pr=abc123' }} />`"+`, d);
		const svg = d.querySelector('svg.qr');
		return svg && svg.querySelector('path').getAttribute('d').length > 100 ? svg.viewBox.baseVal.width : 0;
	})`)
	if size < 21 {
		t.Errorf("QR code size = %d modules, want a drawn code (at least 21)", size)
	}
	p.screenshot("pay-qr")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
