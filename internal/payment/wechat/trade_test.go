package wechat

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/paytest"
)

const notifyURL = "https://gw.example/api/payment/mobile_a/notify"

func fakeProvider(t *testing.T) (*paytest.Wechat, *Provider) {
	t.Helper()
	f := paytest.NewWechat(t)
	return f, New(f.Client())
}

func TestQueryStates(t *testing.T) {
	f, p := fakeProvider(t)
	for _, tc := range []struct {
		state string
		want  payment.TradeState
	}{
		{"SUCCESS", payment.TradePaid}, {"REFUND", payment.TradeRefunded},
		{"NOTPAY", payment.TradePending}, {"USERPAYING", payment.TradePending}, {"PAYERROR", payment.TradePending},
		{"CLOSED", payment.TradeClosed}, {"REVOKED", payment.TradeClosed},
	} {
		for _, signType := range []string{"", SignHMACSHA256} {
			no := "TP" + tc.state
			f.AddTrade(no, 1234)
			f.SetState(no, tc.state)
			got, err := p.Query(context.Background(), f.ConfigJSON(notifyURL, signType), no)
			if err != nil {
				t.Fatalf("%s %q: %v", tc.state, signType, err)
			}
			held, _ := f.Trade(no)
			want := payment.Trade{State: tc.want, OrderNo: no, AmountCents: 1234, TradeNo: held.TransactionID, RawState: tc.state}
			if got != want {
				t.Errorf("%s %q: trade = %+v, want %+v", tc.state, signType, got, want)
			}
			if (tc.want == payment.TradePaid) != (got.TradeNo != "" && tc.state == "SUCCESS") {
				t.Errorf("%s: transaction_id %q", tc.state, got.TradeNo)
			}
			req := f.LastRequest("/pay/orderquery")
			if req["out_trade_no"] != no || req["appid"] != f.AppID || req["mch_id"] != f.MchID ||
				len(req["nonce_str"]) != 32 || req["sign_type"] != signType {
				t.Errorf("%s: request %v", tc.state, req)
			}
		}
	}
	got, err := p.Query(context.Background(), f.ConfigJSON(notifyURL, ""), "TPNONE")
	if err != nil || got != (payment.Trade{State: payment.TradeNotFound, OrderNo: "TPNONE", RawState: "ORDERNOTEXIST"}) {
		t.Errorf("unknown order: %+v, %v", got, err)
	}
}

func TestClose(t *testing.T) {
	f, p := fakeProvider(t)
	cfg := f.ConfigJSON(notifyURL, "")
	ctx := context.Background()
	f.AddTrade("TP1", 100)
	if err := p.Close(ctx, cfg, "TP1"); err != nil {
		t.Fatalf("close: %v", err)
	}
	if tr, _ := f.Trade("TP1"); tr.State != "CLOSED" {
		t.Errorf("after close: %s", tr.State)
	}
	// Closing again is WeChat's ORDERCLOSED: done already.
	if err := p.Close(ctx, cfg, "TP1"); err != nil {
		t.Errorf("second close: %v", err)
	}
	f.AddTrade("TP2", 100)
	f.SetState("TP2", "SUCCESS")
	if err := p.Close(ctx, cfg, "TP2"); !errors.Is(err, payment.ErrTradePaid) {
		t.Errorf("paid: %v", err)
	}
	if err := p.Close(ctx, cfg, "TP3"); !errors.Is(err, payment.ErrTradeNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if n := f.Calls("/pay/closeorder"); n != 4 {
		t.Errorf("closeorder calls %d, want 4", n)
	}
}

func TestTradeCallErrorCodes(t *testing.T) {
	f, p := fakeProvider(t)
	cfg := f.ConfigJSON(notifyURL, "")
	f.AddTrade("TP1", 100)
	for _, tc := range []struct {
		code      string
		temporary bool
	}{{"SYSTEMERROR", true}, {"FREQUENCY_LIMITED", true}, {"SIGNERROR", false}, {"XML_FORMAT_ERROR", false}} {
		f.Answer = func(string, map[string]string) map[string]string {
			return map[string]string{"result_code": "FAIL", "err_code": tc.code, "err_code_des": "系统错误\t"}
		}
		for op, call := range map[string]func() error{
			"close": func() error { return p.Close(context.Background(), cfg, "TP1") },
			"query": func() error { _, err := p.Query(context.Background(), cfg, "TP1"); return err },
		} {
			var pe *payment.ProviderError
			err := call()
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Temporary != tc.temporary || pe.Op != op || pe.Message != "系统错误" {
				t.Errorf("%s %s: %#v", op, tc.code, err)
			}
		}
	}
}

// Answers that are not genuine, not for this order, or carry amounts or
// states we cannot read are refused; none turns into a trade.
func TestQueryAnswerRefused(t *testing.T) {
	f, p := fakeProvider(t)
	cfg := f.ConfigJSON(notifyURL, "")
	f.AddTrade("TP1", 100)
	f.SetState("TP1", "SUCCESS")
	base := func(req map[string]string) map[string]string {
		return map[string]string{"result_code": "SUCCESS", "out_trade_no": "TP1", "trade_state": "SUCCESS",
			"total_fee": "100", "transaction_id": "4200000000202611270000000001"}
	}
	with := func(k, v string) func(string, map[string]string) map[string]string {
		return func(_ string, req map[string]string) map[string]string {
			a := base(req)
			a[k] = v
			return a
		}
	}
	for name, tc := range map[string]struct {
		answer func(string, map[string]string) map[string]string
		tamper func(string, map[string]string)
		want   string
	}{
		"amount tampered":     {tamper: func(_ string, a map[string]string) { a["total_fee"] = "1" }, want: "signature does not match"},
		"state tampered":      {tamper: func(_ string, a map[string]string) { a["trade_state"] = "NOTPAY" }, want: "signature does not match"},
		"unsigned":            {tamper: func(_ string, a map[string]string) { delete(a, "sign") }, want: "not signed"},
		"foreign merchant":    {answer: with("mch_id", "10000999"), want: "not this merchant"},
		"other order":         {answer: with("out_trade_no", "TP2"), want: "not for this order"},
		"unknown state":       {answer: with("trade_state", "ACCEPT"), want: "unknown trade_state"},
		"int64 max":           {answer: with("total_fee", "9223372036854775807"), want: "total_fee"},
		"int64 overflow":      {answer: with("total_fee", "9223372036854775808"), want: "total_fee"},
		"zero":                {answer: with("total_fee", "0"), want: "total_fee"},
		"negative":            {answer: with("total_fee", "-100"), want: "total_fee"},
		"not whole fen":       {answer: with("total_fee", "100.5"), want: "total_fee"},
		"leading zero":        {answer: with("total_fee", "0100"), want: "total_fee"},
		"fullwidth digits":    {answer: with("total_fee", "１００"), want: "total_fee"},
		"other currency":      {answer: with("fee_type", "USD"), want: "fee_type"},
		"paid without id":     {answer: with("transaction_id", ""), want: "transaction_id"},
		"id with NUL":         {answer: with("transaction_id", "42\x00"), want: "not valid UTF-8"},
		"invalid UTF-8 field": {answer: with("trade_state_desc", "\xff\xfe"), want: "not valid UTF-8"},
		"return FAIL": {answer: func(string, map[string]string) map[string]string {
			return map[string]string{"return_code": "FAIL", "return_msg": "签名错误"}
		}, want: "签名错误"},
	} {
		f.Answer, f.Tamper = tc.answer, tc.tamper
		if f.Answer == nil {
			f.Answer = func(_ string, req map[string]string) map[string]string { return base(req) }
		}
		got, err := p.Query(context.Background(), cfg, "TP1")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want error %q", name, got, err, tc.want)
		}
	}
	// The largest amount WeChat's field can carry here (16 digits) is read exactly.
	f.Answer, f.Tamper = with("total_fee", "9999999999999999"), nil
	if got, err := p.Query(context.Background(), cfg, "TP1"); err != nil || got.AmountCents != 9_999_999_999_999_999 {
		t.Errorf("16-digit fee: %+v, %v", got, err)
	}
}

func TestTradeCallsInputRefused(t *testing.T) {
	f, p := fakeProvider(t)
	cfg := f.ConfigJSON(notifyURL, "")
	ctx := context.Background()
	for _, no := range []string{"", "TP\xff", "TP\x00", "TP 1", strings.Repeat("9", 33), "订单1"} {
		if err := p.Close(ctx, cfg, no); err == nil {
			t.Errorf("close %q accepted", no)
		}
		if _, err := p.Query(ctx, cfg, no); err == nil {
			t.Errorf("query %q accepted", no)
		}
	}
	if n := f.Calls("/pay/closeorder") + f.Calls("/pay/orderquery"); n != 0 {
		t.Errorf("%d calls reached WeChat", n)
	}
	// A wrong API key: WeChat refuses the signature.
	wrong := []byte(strings.Replace(string(cfg), f.APIKey, strings.Repeat("0", 32), 1))
	if _, err := p.Query(ctx, wrong, "TP1"); err == nil || !strings.Contains(err.Error(), "签名错误") {
		t.Errorf("wrong key: %v", err)
	}
}

func TestRefundThroughFake(t *testing.T) {
	f, p := fakeProvider(t)
	ctx := context.Background()
	for _, signType := range []string{"", SignHMACSHA256} {
		cfg := f.ConfigJSON(notifyURL, signType)
		no := "TP" + strings.ReplaceAll(signType, "-", "")
		f.AddTrade(no, 1000)
		f.SetState(no, "SUCCESS")
		tr, _ := f.Trade(no)
		r := payment.RefundRequest{OrderNo: no, TradeNo: tr.TransactionID, AmountCents: 600, TotalCents: 1000, RefundNo: "RF" + no, Reason: "订单已取消\xff"}
		first, err := p.Refund(ctx, cfg, r)
		if err != nil {
			t.Fatalf("%q: refund: %v", signType, err)
		}
		if first.RefundNo != r.RefundNo || first.AmountCents != 600 || first.RefundID == "" || first.Settled {
			t.Errorf("refunded %+v", first)
		}
		if req := f.LastRequest("/secapi/pay/refund"); req["refund_desc"] != "订单已取消" || req["transaction_id"] != tr.TransactionID {
			t.Errorf("request %v", req)
		}
		// The same refund number again: the same refund, not a second one.
		again, err := p.Refund(ctx, cfg, r)
		if err != nil || again != first {
			t.Errorf("repeat: %+v, %v; want %+v", again, err, first)
		}
		// More than what is left: refused by WeChat.
		over := r
		over.RefundNo, over.AmountCents = "RF2"+no, 401
		var pe *payment.ProviderError
		if _, err := p.Refund(ctx, cfg, over); !errors.As(err, &pe) || pe.Code != "ERROR" {
			t.Errorf("over-refund: %v", err)
		}
		if got := f.Refunds(no); len(got) != 1 || got[0].RefundFee != 600 {
			t.Errorf("refunds at WeChat: %+v", got)
		}
		if tr, _ := f.Trade(no); tr.State != "REFUND" {
			t.Errorf("state after refund %s", tr.State)
		}
	}
	cfg := f.ConfigJSON(notifyURL, "")
	for name, r := range map[string]payment.RefundRequest{
		"int64 max amount":  {OrderNo: "TP1", AmountCents: math.MaxInt64, TotalCents: 1000, RefundNo: "RF1"},
		"negative":          {OrderNo: "TP1", AmountCents: -1, TotalCents: 1000, RefundNo: "RF1"},
		"int64 min total":   {OrderNo: "TP1", AmountCents: 1, TotalCents: math.MinInt64, RefundNo: "RF1"},
		"bad trade no":      {OrderNo: "TP1", TradeNo: "42\xff", AmountCents: 1, TotalCents: 1000, RefundNo: "RF1"},
		"bad refund number": {OrderNo: "TP1", AmountCents: 1, TotalCents: 1000, RefundNo: "RF\x00"},
	} {
		if _, err := p.Refund(ctx, cfg, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Sent, but WeChat has another total for the order.
	f.AddTrade("TPBIG", 1000)
	f.SetState("TPBIG", "SUCCESS")
	var pe *payment.ProviderError
	if _, err := p.Refund(ctx, cfg, payment.RefundRequest{OrderNo: "TPBIG", AmountCents: 1, TotalCents: math.MaxInt64, RefundNo: "RFBIG"}); !errors.As(err, &pe) || pe.Code != "PARAM_ERROR" {
		t.Errorf("total differs: %v", err)
	}
}
