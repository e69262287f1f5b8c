package paytest_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/alipay"
	"github.com/modelgate/modelgate/internal/payment/paytest"
	"github.com/modelgate/modelgate/internal/payment/wechat"
)

// The fakes' whole cycle through the production providers: prepay, a
// payment whose notification the provider verifies, the query that sees
// it, a refund.
func TestFakesThroughProviders(t *testing.T) {
	ctx := context.Background()
	o := payment.Prepay{OrderNo: "TP20261127000001", AmountCents: 1234, Subject: "充值"}

	w := paytest.NewWechat(t)
	wp := wechat.New(w.Client())
	wcfg := w.ConfigJSON("https://gw.example/n", "")
	a := paytest.NewAlipay(t)
	ap := alipay.New(a.Client())
	acfg := a.ConfigJSON("https://gw.example/n")

	for _, c := range []struct {
		name string
		p    interface {
			payment.Provider
			payment.Trades
		}
		cfg    []byte
		pay    func() string
		ctype  string
		before payment.TradeState
	}{
		{"wechat", wp, wcfg, func() string { return w.Pay(t, o.OrderNo) }, "text/xml", payment.TradePending},
		// A precreate code is not a trade until scanned.
		{"alipay", ap, acfg, func() string { return a.Pay(t, o.OrderNo) }, "application/x-www-form-urlencoded", payment.TradeNotFound},
	} {
		if _, err := c.p.Prepay(ctx, c.cfg, o); err != nil {
			t.Fatalf("%s prepay: %v", c.name, err)
		}
		if tr, err := c.p.Query(ctx, c.cfg, o.OrderNo); err != nil || tr.State != c.before {
			t.Errorf("%s before paying: %+v, %v", c.name, tr, err)
		}
		r := httptest.NewRequest("POST", "/notify", strings.NewReader(c.pay()))
		r.Header.Set("Content-Type", c.ctype)
		paid, err := c.p.Notify(r, c.cfg)
		if err != nil || paid.OrderNo != o.OrderNo || paid.AmountCents != 1234 || paid.TradeNo == "" {
			t.Fatalf("%s notify: %+v, %v", c.name, paid, err)
		}
		tr, err := c.p.Query(ctx, c.cfg, o.OrderNo)
		if err != nil || tr.State != payment.TradePaid || tr.TradeNo != paid.TradeNo || tr.AmountCents != 1234 {
			t.Errorf("%s after paying: %+v, %v", c.name, tr, err)
		}
		if err := c.p.Close(ctx, c.cfg, o.OrderNo); err != payment.ErrTradePaid {
			t.Errorf("%s close of a paid trade: %v", c.name, err)
		}
		ref, err := c.p.Refund(ctx, c.cfg, payment.RefundRequest{OrderNo: o.OrderNo, TradeNo: tr.TradeNo, AmountCents: 1234, TotalCents: 1234, RefundNo: "RF1"})
		if err != nil || ref.AmountCents != 1234 {
			t.Errorf("%s refund: %+v, %v", c.name, ref, err)
		}
	}
	if len(w.Refunds(o.OrderNo)) != 1 || len(a.Refunds(o.OrderNo)) != 1 {
		t.Errorf("refunds: wechat %v, alipay %v", w.Refunds(o.OrderNo), a.Refunds(o.OrderNo))
	}
}

// Parallel identical refunds (one refund number) refund once at either
// fake, and each caller hears success: the idempotency the providers
// promise and the callers rely on.
func TestParallelIdenticalRefunds(t *testing.T) {
	ctx := context.Background()
	w := paytest.NewWechat(t)
	w.AddTrade("TP1", 500)
	w.SetState("TP1", "SUCCESS")
	a := paytest.NewAlipay(t)
	a.AddTrade("TP1", 500)
	a.SetStatus("TP1", "TRADE_SUCCESS")
	r := payment.RefundRequest{OrderNo: "TP1", AmountCents: 500, TotalCents: 500, RefundNo: "RF1"}
	for name, call := range map[string]func() (payment.Refunded, error){
		"wechat": func() (payment.Refunded, error) {
			return wechat.New(w.Client()).Refund(ctx, w.ConfigJSON("https://x", ""), r)
		},
		"alipay": func() (payment.Refunded, error) {
			return alipay.New(a.Client()).Refund(ctx, a.ConfigJSON("https://x"), r)
		},
	} {
		var wg sync.WaitGroup
		var settled atomic.Int32
		for range 40 {
			wg.Go(func() {
				got, err := call()
				if err != nil || got.AmountCents != 500 {
					t.Errorf("%s: %+v, %v", name, got, err)
				}
				if got.Settled {
					settled.Add(1)
				}
			})
		}
		wg.Wait()
		if name == "alipay" && settled.Load() != 1 {
			t.Errorf("alipay: %d answers moved money, want 1", settled.Load())
		}
	}
	if len(w.Refunds("TP1")) != 1 || len(a.Refunds("TP1")) != 1 {
		t.Errorf("refunds: wechat %v, alipay %v", w.Refunds("TP1"), a.Refunds("TP1"))
	}
}
