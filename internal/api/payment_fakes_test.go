package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/alipay"
	"github.com/modelgate/modelgate/internal/payment/paytest"
	"github.com/modelgate/modelgate/internal/payment/wechat"
	"github.com/modelgate/modelgate/internal/user"
)

// The importable provider fakes (internal/payment/paytest) behind the
// real HTTP surface: a top-up through each wallet's fake, its payment
// notification delivered 10 times at once and credited once, and the
// provider's query agreeing with the order's payment.
func TestTopupThroughProviderFakes(t *testing.T) {
	apptest.Parallel(t)
	wf, af := paytest.NewWechat(t), paytest.NewAlipay(t)
	providers := map[string]payment.Provider{
		payment.MethodWechat: wechat.New(wf.Client()),
		payment.MethodAlipay: alipay.New(af.Client()),
	}
	e := apptest.NewWith(t, []app.Option{app.WithPaymentProviders(providers)})
	root := e.Root()
	u, uid := e.NewUser("fakebuyer", user.RoleUser)
	notify := func(method string) string { return e.Server.URL + "/api/payment/" + method + "/notify" }
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": wf.Config(notify("mobile_a"))})
	root.OK("PUT", "/api/setting/payment/mobile_b", map[string]any{"enabled": true, "config": af.Config(notify("mobile_b"))})
	topupOn(root)

	for _, c := range []struct {
		method, ctype string
		pay           func(orderNo string) string
		config        []byte
	}{
		{"mobile_a", "text/xml", func(no string) string { return wf.Pay(t, no) }, wf.ConfigJSON(notify("mobile_a"), "")},
		{"mobile_b", "application/x-www-form-urlencoded", func(no string) string { return af.Pay(t, no) }, af.ConfigJSON(notify("mobile_b"))},
	} {
		a := topup(t, u, map[string]any{"amount": 3.21, "pay_method": c.method})
		if a.Pay.Status != "success" {
			t.Fatalf("%s: pay %+v", c.method, a.Pay)
		}
		before := balanceOf(t, root, uid)
		body := c.pay(a.Order.OrderNo)
		for i, r := range postNotify(t, e, c.method, c.ctype, body, 10) {
			if !strings.Contains(strings.ToLower(r), "success") {
				t.Errorf("%s delivery %d: %q", c.method, i, r)
			}
		}
		if got := balanceOf(t, root, uid); got != before+3_210_000 {
			t.Errorf("%s: balance %d, want %d + 3,210,000 once", c.method, got, before)
		}
		tr, err := providers[c.method].(payment.Trades).Query(context.Background(), c.config, a.Order.OrderNo)
		if err != nil || tr.State != payment.TradePaid || tr.AmountCents != 321 {
			t.Errorf("%s: query %+v, %v", c.method, tr, err)
		}
	}
}
