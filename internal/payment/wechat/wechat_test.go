package wechat

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/payment"
)

const (
	testAppID  = "wx0000000000000001"
	testMchID  = "1900000109"
	testAPIKey = "192006250b4c09247ec02edce69f6a2d"
)

// The signature example of WeChat Pay's API v2 documentation (安全规范,
// 签名算法): the published MD5 and HMAC-SHA256 signs of this message.
func TestSignDocumentedExample(t *testing.T) {
	fields := map[string]string{
		"appid": "wxd930ea5d5a258f4f", "mch_id": "10000100", "device_info": "1000",
		"body": "test", "nonce_str": "ibuaiVcKdpRxkhJA", "empty": "", "sign": "ignored",
	}
	for _, tc := range []struct{ signType, want string }{
		{"", "9A0A8659F005D6984697E2CA0A9CF3B7"},
		{SignMD5, "9A0A8659F005D6984697E2CA0A9CF3B7"},
		{SignHMACSHA256, "6A9AE1657590FD6257D693A078E1C3E4BB6BA4DC30B23E0EE2496E54170DACD6"},
	} {
		got, err := sign(fields, tc.signType, "192006250b4c09247ec02edce69f6a2d")
		if err != nil || got != tc.want {
			t.Errorf("sign %q = %s, %v; want %s", tc.signType, got, err, tc.want)
		}
	}
	if _, err := sign(fields, "SHA1", "k"); err == nil {
		t.Error("unknown sign type accepted")
	}
}

func testConfig(t *testing.T, gateway, signType string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]string{
		"app_id": testAppID, "mch_id": testMchID, "api_key": testAPIKey,
		"notify_url": "https://gw.example/api/payment/mobile_a/notify",
		"gateway":    gateway, "sign_type": signType,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeWechat is a WeChat Pay v2 unified-order endpoint: it checks the
// request's signature and fields as WeChat does and answers a signed XML.
type fakeWechat struct {
	t      *testing.T
	got    map[string]string
	answer func(req map[string]string) map[string]string // nil: success
}

func (f *fakeWechat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/pay/unifiedorder" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	req, err := decodeXML(body)
	if err != nil {
		f.t.Errorf("request XML: %v", err)
		return
	}
	f.got = req
	if err := verify(req, req["sign_type"], testAPIKey); err != nil {
		w.Write(encodeXML(map[string]string{"return_code": "FAIL", "return_msg": "签名错误"}))
		return
	}
	var resp map[string]string
	if f.answer != nil {
		resp = f.answer(req)
	} else {
		resp = map[string]string{
			"return_code": "SUCCESS", "return_msg": "OK", "appid": req["appid"], "mch_id": req["mch_id"],
			"nonce_str": "5K8264ILTKCH16CQ2502SI8ZNMTM67VS", "result_code": "SUCCESS",
			"prepay_id": "wx201410272009395522657a690389285100", "trade_type": "NATIVE",
			"code_url": "weixin://wxpay/bizpayurl?pr=" + req["out_trade_no"],
		}
	}
	if resp["return_code"] == "SUCCESS" && resp["sign"] == "" {
		resp["sign"], _ = sign(resp, req["sign_type"], testAPIKey)
	}
	w.Write(encodeXML(resp))
}

func newFake(t *testing.T) (*fakeWechat, *httptest.Server) {
	f := &fakeWechat{t: t}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

var testNow = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

func testProvider(srv *httptest.Server) *Provider {
	p := New(srv.Client())
	p.Now = func() time.Time { return testNow }
	return p
}

var testPrepay = payment.Prepay{OrderNo: "TP20261124000001", AmountCents: 1234, Subject: "充值 12.34", ClientIP: "203.0.113.7"}

func TestPrepayBothSignTypes(t *testing.T) {
	for _, signType := range []string{"", SignHMACSHA256} {
		f, srv := newFake(t)
		pay, err := testProvider(srv).Prepay(context.Background(), testConfig(t, srv.URL, signType), testPrepay)
		if err != nil {
			t.Fatalf("%q: prepay: %v", signType, err)
		}
		want := payment.Pay{
			Status: payment.PayReady, PayURL: "weixin://wxpay/bizpayurl?pr=TP20261124000001",
			QRCode: "weixin://wxpay/bizpayurl?pr=TP20261124000001", TradeNo: "wx201410272009395522657a690389285100",
			ExpireAt: testNow.Add(DefaultTTL).Unix(),
		}
		if pay != want {
			t.Errorf("%q: pay = %+v, want %+v", signType, pay, want)
		}
		for k, v := range map[string]string{
			"appid": testAppID, "mch_id": testMchID, "out_trade_no": "TP20261124000001", "total_fee": "1234",
			"trade_type": "NATIVE", "body": "充值 12.34", "spbill_create_ip": "203.0.113.7",
			"time_start": "20261124090000", "time_expire": "20261124110000", "sign_type": signType,
			"notify_url": "https://gw.example/api/payment/mobile_a/notify",
		} {
			if f.got[k] != v {
				t.Errorf("%q: request %s = %q, want %q", signType, k, f.got[k], v)
			}
		}
		if len(f.got["nonce_str"]) != 32 {
			t.Errorf("nonce_str %q", f.got["nonce_str"])
		}
	}
}

func TestPrepayRefused(t *testing.T) {
	cases := []struct {
		name   string
		answer func(map[string]string) map[string]string
		want   string
	}{
		{"return FAIL", func(map[string]string) map[string]string {
			return map[string]string{"return_code": "FAIL", "return_msg": "appid不存在"}
		}, "appid不存在"},
		{"result FAIL", func(r map[string]string) map[string]string {
			return map[string]string{"return_code": "SUCCESS", "appid": r["appid"], "mch_id": r["mch_id"],
				"result_code": "FAIL", "err_code": "ORDERPAID", "err_code_des": "该订单已支付"}
		}, "ORDERPAID"},
		{"bad answer sign", func(r map[string]string) map[string]string {
			return map[string]string{"return_code": "SUCCESS", "appid": r["appid"], "mch_id": r["mch_id"],
				"result_code": "SUCCESS", "prepay_id": "x", "code_url": "weixin://x", "sign": "00"}
		}, "signature does not match"},
		{"foreign merchant", func(r map[string]string) map[string]string {
			return map[string]string{"return_code": "SUCCESS", "appid": "wxother", "mch_id": r["mch_id"],
				"result_code": "SUCCESS", "prepay_id": "x", "code_url": "weixin://x"}
		}, "not this merchant"},
		{"no code_url", func(r map[string]string) map[string]string {
			return map[string]string{"return_code": "SUCCESS", "appid": r["appid"], "mch_id": r["mch_id"],
				"result_code": "SUCCESS", "prepay_id": "x"}
		}, "code_url"},
	}
	for _, tc := range cases {
		f, srv := newFake(t)
		f.answer = tc.answer
		_, err := testProvider(srv).Prepay(context.Background(), testConfig(t, srv.URL, ""), testPrepay)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPrepayInputRefused(t *testing.T) {
	_, srv := newFake(t)
	p := testProvider(srv)
	cfg := testConfig(t, srv.URL, "")
	for name, tc := range map[string]struct {
		cfg []byte
		o   payment.Prepay
	}{
		"zero amount":      {cfg, payment.Prepay{OrderNo: "TP1", AmountCents: 0}},
		"negative amount":  {cfg, payment.Prepay{OrderNo: "TP1", AmountCents: -5}},
		"bad order number": {cfg, payment.Prepay{OrderNo: "TP 1\x00", AmountCents: 1}},
		"no api key":       {[]byte(`{"app_id":"a","mch_id":"m","notify_url":"https://x"}`), testPrepay},
		"no notify_url":    {[]byte(`{"app_id":"a","mch_id":"m","api_key":"k"}`), testPrepay},
		"bad gateway":      {[]byte(`{"app_id":"a","mch_id":"m","api_key":"k","notify_url":"https://x","gateway":"file:///etc"}`), testPrepay},
		"bad sign type":    {[]byte(`{"app_id":"a","mch_id":"m","api_key":"k","notify_url":"https://x","sign_type":"RSA"}`), testPrepay},
		"not JSON":         {[]byte(`nope`), testPrepay},
	} {
		if _, err := p.Prepay(context.Background(), tc.cfg, tc.o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBodyField(t *testing.T) {
	long := strings.Repeat("充", 60) // 180 bytes
	got := bodyField(long, "TP1")
	if len(got) > maxBodyField || !strings.HasPrefix(long, got) {
		t.Errorf("bodyField cut to %d bytes: %q", len(got), got)
	}
	if got := bodyField("\x00\xff", "TP1"); got != "TP1" {
		t.Errorf("bodyField of junk = %q", got)
	}
}
