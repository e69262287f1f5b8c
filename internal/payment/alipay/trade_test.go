package alipay

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/paytest"
)

const notifyURL = "https://gw.example/api/payment/mobile_b/notify"

func fakeProvider(t *testing.T) (*paytest.Alipay, *Provider, []byte) {
	t.Helper()
	f := paytest.NewAlipay(t)
	p := New(f.Client())
	p.Now = func() time.Time { return testNow }
	return f, p, f.ConfigJSON(notifyURL)
}

func TestTradeQueryStates(t *testing.T) {
	f, p, cfg := fakeProvider(t)
	for _, tc := range []struct {
		status string
		want   payment.TradeState
	}{
		{"WAIT_BUYER_PAY", payment.TradePending}, {"TRADE_CLOSED", payment.TradeClosed},
		{"TRADE_SUCCESS", payment.TradePaid}, {"TRADE_FINISHED", payment.TradePaid},
	} {
		no := "TP" + tc.status
		f.AddTrade(no, 1234)
		f.SetStatus(no, tc.status)
		got, err := p.Query(context.Background(), cfg, no)
		if err != nil {
			t.Fatalf("%s: %v", tc.status, err)
		}
		held, _ := f.Trade(no)
		want := payment.Trade{State: tc.want, OrderNo: no, AmountCents: 1234, TradeNo: held.TradeNo, RawState: tc.status}
		if got != want || got.TradeNo == "" {
			t.Errorf("%s: %+v, want %+v", tc.status, got, want)
		}
		req := f.LastRequest("alipay.trade.query")
		var biz map[string]string
		json.Unmarshal([]byte(req.Get("biz_content")), &biz)
		if req.Get("timestamp") != "2026-11-24 09:00:00" || biz["out_trade_no"] != no || req.Get("notify_url") != "" {
			t.Errorf("%s: request %v", tc.status, req)
		}
	}
	// A precreate code nobody scanned: Alipay has no trade yet.
	f.AddTrade("TPNEW", 100)
	for _, no := range []string{"TPNEW", "TPNONE"} {
		got, err := p.Query(context.Background(), cfg, no)
		if err != nil || got != (payment.Trade{State: payment.TradeNotFound, OrderNo: no, RawState: "ACQ.TRADE_NOT_EXIST"}) {
			t.Errorf("%s: %+v, %v", no, got, err)
		}
	}
}

func TestTradeClose(t *testing.T) {
	f, p, cfg := fakeProvider(t)
	ctx := context.Background()
	f.AddTrade("TP1", 100)
	f.SetStatus("TP1", "WAIT_BUYER_PAY")
	if err := p.Close(ctx, cfg, "TP1"); err != nil {
		t.Fatalf("close: %v", err)
	}
	if tr, _ := f.Trade("TP1"); tr.Status != "TRADE_CLOSED" {
		t.Errorf("after close %s", tr.Status)
	}
	// Closed before: Alipay's TRADE_STATUS_ERROR, resolved by a query.
	if err := p.Close(ctx, cfg, "TP1"); err != nil {
		t.Errorf("second close: %v", err)
	}
	f.AddTrade("TP2", 100)
	f.SetStatus("TP2", "TRADE_SUCCESS")
	if err := p.Close(ctx, cfg, "TP2"); !errors.Is(err, payment.ErrTradePaid) {
		t.Errorf("paid: %v", err)
	}
	f.AddTrade("TP3", 100) // precreated, not scanned
	if err := p.Close(ctx, cfg, "TP3"); !errors.Is(err, payment.ErrTradeNotFound) {
		t.Errorf("not scanned: %v", err)
	}
	if q := f.Calls("alipay.trade.query"); q != 2 {
		t.Errorf("%d queries, want 2 (one per TRADE_STATUS_ERROR)", q)
	}
}

func TestTradeErrorCodes(t *testing.T) {
	f, p, cfg := fakeProvider(t)
	for _, tc := range []struct {
		answer    string
		code      string
		temporary bool
	}{
		{`{"code":"40004","msg":"Business Failed","sub_code":"ACQ.SYSTEM_ERROR","sub_msg":"系统错误"}`, "ACQ.SYSTEM_ERROR", true},
		{`{"code":"20000","msg":"Service Currently Unavailable","sub_code":"isp.unknow-error","sub_msg":"系统繁忙"}`, "isp.unknow-error", true},
		{`{"code":"40004","msg":"Business Failed","sub_code":"ACQ.INVALID_PARAMETER","sub_msg":"参数无效"}`, "ACQ.INVALID_PARAMETER", false},
		{`{"code":"40006","msg":"Insufficient Permissions"}`, "40006", false},
	} {
		f.Answer = func(string, map[string]any) string { return tc.answer }
		for op, call := range map[string]func() error{
			"close":  func() error { return p.Close(context.Background(), cfg, "TP1") },
			"query":  func() error { _, err := p.Query(context.Background(), cfg, "TP1"); return err },
			"refund": func() error { _, err := p.Refund(context.Background(), cfg, testRefund("TP1", "", 1)); return err },
		} {
			var pe *payment.ProviderError
			if err := call(); !errors.As(err, &pe) || pe.Code != tc.code || pe.Temporary != tc.temporary || pe.Op != op {
				t.Errorf("%s %s: %#v", op, tc.code, err)
			}
		}
	}
}

func testRefund(no, tradeNo string, cents int64) payment.RefundRequest {
	return payment.RefundRequest{OrderNo: no, TradeNo: tradeNo, AmountCents: cents, TotalCents: 1000, RefundNo: "RF" + no, Reason: "订单已过期\x00"}
}

// Answers that are not genuine, not for this order, or carry amounts or
// states we cannot read are refused.
func TestTradeQueryAnswerRefused(t *testing.T) {
	f, p, cfg := fakeProvider(t)
	f.AddTrade("TP1", 100)
	f.SetStatus("TP1", "TRADE_SUCCESS")
	answer := func(field, value string) func(string, map[string]any) string {
		return func(string, map[string]any) string {
			a := map[string]string{"code": "10000", "msg": "Success", "trade_no": "2026112722001000000000000001",
				"out_trade_no": "TP1", "trade_status": "TRADE_SUCCESS", "total_amount": "1.00"}
			a[field] = value
			b, _ := json.Marshal(a)
			return string(b)
		}
	}
	for name, tc := range map[string]struct {
		answer func(string, map[string]any) string
		tamper func(string, string) string
		want   string
	}{
		"amount tampered":    {tamper: func(_, b string) string { return strings.Replace(b, `"1.00"`, `"0.01"`, 1) }, want: "signature does not match"},
		"status tampered":    {tamper: func(_, b string) string { return strings.Replace(b, "TRADE_SUCCESS", "TRADE_CLOSED", 1) }, want: "signature does not match"},
		"unsigned":           {tamper: func(_, b string) string { return b[:strings.LastIndex(b, `,"sign"`)] + "}" }, want: "not signed"},
		"re-encoded":         {tamper: func(_, b string) string { return strings.Replace(b, `"code":`, `"code": `, 1) }, want: "signature does not match"},
		"not-exist unsigned": {answer: func(string, map[string]any) string { return `{"code":"40004","sub_code":"ACQ.TRADE_NOT_EXIST"}` }, tamper: func(_, b string) string { return b[:strings.LastIndex(b, `,"sign"`)] + "}" }, want: "ACQ.TRADE_NOT_EXIST"},
		"other order":        {answer: answer("out_trade_no", "TP2"), want: "not for this order"},
		"unknown status":     {answer: answer("trade_status", "TRADE_PENDING"), want: "unknown trade_status"},
		"not whole fen":      {answer: answer("total_amount", "1.001"), want: "total_amount"},
		"int64 overflow":     {answer: answer("total_amount", "92233720368547758.07"), want: "total_amount"},
		"negative":           {answer: answer("total_amount", "-1.00"), want: "total_amount"},
		"zero":               {answer: answer("total_amount", "0.00"), want: "total_amount"},
		"exponent":           {answer: answer("total_amount", "1e2"), want: "total_amount"},
		"paid without id":    {answer: answer("trade_no", ""), want: "without trade_no"},
		"trade_no with NUL":  {answer: answer("trade_no", "2026\x00"), want: "trade_no"},
		"invalid UTF-8":      {answer: func(string, map[string]any) string { return "{\"code\":\"10000\",\"out_trade_no\":\"TP1\xff\"}" }, want: "not for this order"},
	} {
		f.Answer, f.Tamper = tc.answer, tc.tamper
		got, err := p.Query(context.Background(), cfg, "TP1")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want error %q", name, got, err, tc.want)
		}
	}
	// The largest amount ParseYuan reads (13 integer digits) is exact.
	f.Answer, f.Tamper = answer("total_amount", "9999999999999.99"), nil
	if got, err := p.Query(context.Background(), cfg, "TP1"); err != nil || got.AmountCents != 999_999_999_999_999 {
		t.Errorf("largest amount: %+v, %v", got, err)
	}
	// An answer signed by anyone but Alipay: a config with another Alipay key.
	f.Answer = nil
	other := paytest.NewAlipay(t)
	var c map[string]any
	json.Unmarshal(cfg, &c)
	c["public_key"] = other.AlipayPublicKeyPEM()
	foreign, _ := json.Marshal(c)
	if _, err := p.Query(context.Background(), foreign, "TP1"); err == nil || !strings.Contains(err.Error(), "signature does not match") {
		t.Errorf("foreign signer: %v", err)
	}
	// Our request signed with another app key: Alipay refuses it.
	c["public_key"], c["private_key"] = f.AlipayPublicKeyPEM(), other.AppPrivateKeyPEM()
	wrongApp, _ := json.Marshal(c)
	if _, err := p.Query(context.Background(), wrongApp, "TP1"); err == nil || !strings.Contains(err.Error(), "isv.invalid-signature") {
		t.Errorf("wrong app key: %v", err)
	}
}

func TestTradeRefund(t *testing.T) {
	f, p, cfg := fakeProvider(t)
	ctx := context.Background()
	f.AddTrade("TP1", 1000)
	f.SetStatus("TP1", "TRADE_SUCCESS")
	tr, _ := f.Trade("TP1")
	r := testRefund("TP1", tr.TradeNo, 333)
	got, err := p.Refund(ctx, cfg, r)
	if err != nil {
		t.Fatal(err)
	}
	if got != (payment.Refunded{RefundNo: "RFTP1", RefundID: tr.TradeNo, AmountCents: 333, Settled: true}) {
		t.Errorf("refunded %+v", got)
	}
	var biz map[string]string
	json.Unmarshal([]byte(f.LastRequest("alipay.trade.refund").Get("biz_content")), &biz)
	if biz["refund_amount"] != "3.33" || biz["out_request_no"] != "RFTP1" || biz["trade_no"] != tr.TradeNo || biz["refund_reason"] != "订单已过期" {
		t.Errorf("biz_content %v", biz)
	}
	// A repeat of the same out_request_no: success, no money moved.
	again, err := p.Refund(ctx, cfg, r)
	if err != nil || again.Settled || again.AmountCents != 333 {
		t.Errorf("repeat: %+v, %v", again, err)
	}
	// The same out_request_no with another amount, and more than is left: refused.
	var pe *payment.ProviderError
	changed := r
	changed.AmountCents = 334
	if _, err := p.Refund(ctx, cfg, changed); !errors.As(err, &pe) || pe.Code != "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL" {
		t.Errorf("changed amount: %v", err)
	}
	over := r
	over.RefundNo, over.AmountCents = "RF2", 668
	if _, err := p.Refund(ctx, cfg, over); !errors.As(err, &pe) || pe.Code != "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL" {
		t.Errorf("over-refund: %v", err)
	}
	// The rest: the trade is refunded in full, which Alipay reports as closed.
	rest := r
	rest.RefundNo, rest.AmountCents = "RF3", 667
	if _, err := p.Refund(ctx, cfg, rest); err != nil {
		t.Fatal(err)
	}
	if q, err := p.Query(ctx, cfg, "TP1"); err != nil || q.State != payment.TradeClosed {
		t.Errorf("after full refund: %+v, %v", q, err)
	}
	if refunds := f.Refunds("TP1"); len(refunds) != 2 {
		t.Errorf("refunds at Alipay: %+v", refunds)
	}
	// Unpaid and unknown trades cannot be refunded.
	f.AddTrade("TP2", 1000)
	f.SetStatus("TP2", "WAIT_BUYER_PAY")
	for no, code := range map[string]string{"TP2": "ACQ.TRADE_STATUS_ERROR", "TP9": "ACQ.TRADE_NOT_EXIST"} {
		if _, err := p.Refund(ctx, cfg, testRefund(no, "", 1)); !errors.As(err, &pe) || pe.Code != code {
			t.Errorf("%s: %v", no, err)
		}
	}
	// Refused before Alipay is asked.
	before := f.Calls("alipay.trade.refund")
	for name, r := range map[string]payment.RefundRequest{
		"int64 max":        {OrderNo: "TP1", AmountCents: math.MaxInt64, TotalCents: math.MaxInt64, RefundNo: "RF9"},
		"above total":      {OrderNo: "TP1", AmountCents: 1001, TotalCents: 1000, RefundNo: "RF9"},
		"zero":             {OrderNo: "TP1", TotalCents: 1000, RefundNo: "RF9"},
		"int64 min":        {OrderNo: "TP1", AmountCents: math.MinInt64, TotalCents: 1000, RefundNo: "RF9"},
		"no refund no":     {OrderNo: "TP1", AmountCents: 1, TotalCents: 1000},
		"bad refund no":    {OrderNo: "TP1", AmountCents: 1, TotalCents: 1000, RefundNo: "RF\xff"},
		"bad order no":     {OrderNo: "TP1\x00", AmountCents: 1, TotalCents: 1000, RefundNo: "RF9"},
		"bad trade no":     {OrderNo: "TP1", TradeNo: "20 26", AmountCents: 1, TotalCents: 1000, RefundNo: "RF9"},
		"over the limit":   {OrderNo: "TP1", AmountCents: 1, TotalCents: maxFen + 1, RefundNo: "RF9"},
		"invalid UTF-8 no": {OrderNo: "\xc3\x28", AmountCents: 1, TotalCents: 1000, RefundNo: "RF9"},
	} {
		if _, err := p.Refund(ctx, cfg, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if f.Calls("alipay.trade.refund") != before {
		t.Error("a refused refund reached Alipay")
	}
}
