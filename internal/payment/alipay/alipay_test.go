package alipay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	oracle "github.com/smartwalle/alipay/v3"

	"github.com/modelgate/modelgate/internal/payment"
)

const testAppID = "2021000000000001"

func testConfig(t *testing.T, gateway string) []byte {
	t.Helper()
	k := genKeys(t)
	b, err := json.Marshal(payment.AlipayConfig{
		AppID:      testAppID,
		PrivateKey: bare(pkcs8DER(t, k.app)), // as the console gives it
		PublicKey:  bare(pkixDER(t, &k.ali.PublicKey)),
		Gateway:    gateway,
		NotifyURL:  "https://gw.example/api/payment/mobile_b/notify",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oracleClient is the independent smartwalle/alipay client holding
// signer's private key: an app when it checks our request signature, or
// Alipay when it signs answers and notifications.
func oracleClient(t *testing.T, signer string) *oracle.Client {
	t.Helper()
	c, err := oracle.New(testAppID, signer, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeAlipay is the OpenAPI gateway for alipay.trade.precreate: it checks
// our request signature against the independent library's own signature
// of the same parameters (PKCS#1 v1.5 is deterministic) and answers a
// response signed by the library with Alipay's key.
type fakeAlipay struct {
	t       *testing.T
	got     url.Values
	answer  string // response object JSON; "" = success
	badSign bool
}

func (f *fakeAlipay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := genKeys(f.t)
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("request form: %v", err)
		return
	}
	f.got = r.PostForm
	unsigned := url.Values{}
	for key, v := range r.PostForm {
		if key != "sign" {
			unsigned[key] = v
		}
	}
	want, err := oracleClient(f.t, pkcs1PEM(k.app)).SignValues(unsigned)
	if err != nil {
		f.t.Fatal(err)
	}
	if r.PostForm.Get("sign") != base64.StdEncoding.EncodeToString(want) {
		f.t.Errorf("request signature differs from the independent library's")
		w.Write([]byte(`{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"验签出错"}}`))
		return
	}
	var biz bizContent
	json.Unmarshal([]byte(r.PostForm.Get("biz_content")), &biz)
	resp := f.answer
	if resp == "" {
		resp = `{"code":"10000","msg":"Success","out_trade_no":"` + biz.OutTradeNo + `","qr_code":"https:\/\/qr.alipay.com\/bax03431ljhokirwl38f00a7"}`
	}
	sig, err := oracleClient(f.t, pkcs1PEM(k.ali)).SignBytes([]byte(resp))
	if err != nil {
		f.t.Fatal(err)
	}
	if f.badSign {
		sig[0] ^= 1
	}
	w.Header().Set("Content-Type", "text/html;charset=utf-8")
	w.Write([]byte(`{"` + responseKey + `":` + resp + `,"sign":"` + base64.StdEncoding.EncodeToString(sig) + `"}`))
}

var testNow = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

func newFake(t *testing.T) (*fakeAlipay, *Provider, []byte) {
	f := &fakeAlipay{t: t}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p := New(srv.Client())
	p.Now = func() time.Time { return testNow }
	return f, p, testConfig(t, srv.URL+"/gateway.do")
}

var testPrepay = payment.Prepay{OrderNo: "TP20261124000001", AmountCents: 1234, Subject: "充值 <12.34> & more", ClientIP: "203.0.113.7"}

func TestPrepay(t *testing.T) {
	f, p, cfg := newFake(t)
	pay, err := p.Prepay(context.Background(), cfg, testPrepay)
	if err != nil {
		t.Fatal(err)
	}
	want := payment.Pay{
		Status: payment.PayReady, PayURL: "https://qr.alipay.com/bax03431ljhokirwl38f00a7",
		QRCode: "https://qr.alipay.com/bax03431ljhokirwl38f00a7", TradeNo: "bax03431ljhokirwl38f00a7",
		ExpireAt: testNow.Add(DefaultTTL).Unix(),
	}
	if pay != want {
		t.Errorf("pay = %+v, want %+v", pay, want)
	}
	for k, v := range map[string]string{
		"app_id": testAppID, "method": "alipay.trade.precreate", "charset": "utf-8", "sign_type": "RSA2",
		"version": "1.0", "timestamp": "2026-11-24 09:00:00", "format": "JSON",
		"notify_url": "https://gw.example/api/payment/mobile_b/notify",
	} {
		if f.got.Get(k) != v {
			t.Errorf("request %s = %q, want %q", k, f.got.Get(k), v)
		}
	}
	var biz bizContent
	if err := json.Unmarshal([]byte(f.got.Get("biz_content")), &biz); err != nil {
		t.Fatal(err)
	}
	if biz != (bizContent{OutTradeNo: "TP20261124000001", TotalAmount: "12.34", Subject: "充值 <12.34> & more", TimeoutExpress: "120m"}) {
		t.Errorf("biz_content = %+v", biz)
	}
}

func TestPrepayRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		answer  string
		badSign bool
		want    string
	}{
		"provider error":  {answer: `{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS","sub_msg":"交易已被支付"}`, want: "ACQ.TRADE_HAS_SUCCESS"},
		"bad answer sign": {badSign: true, want: "signature does not match"},
		"other order":     {answer: `{"code":"10000","msg":"Success","out_trade_no":"TP2","qr_code":"https://qr.alipay.com/x"}`, want: "not for this order"},
		"no qr_code":      {answer: `{"code":"10000","msg":"Success","out_trade_no":"TP20261124000001"}`, want: "no qr_code"},
	} {
		f, p, cfg := newFake(t)
		f.answer, f.badSign = tc.answer, tc.badSign
		_, err := p.Prepay(context.Background(), cfg, testPrepay)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

func TestPrepayAnswerTampered(t *testing.T) {
	k := genKeys(t)
	resp := `{"code":"10000","msg":"Success","out_trade_no":"TP1","qr_code":"https://qr.alipay.com/good"}`
	sig, _ := oracleClient(t, pkcs1PEM(k.ali)).SignBytes([]byte(resp))
	s := base64.StdEncoding.EncodeToString(sig)
	ok := `{"` + responseKey + `":` + resp + `,"sign":"` + s + `"}`
	if _, err := readAnswer([]byte(ok), &k.ali.PublicKey); err != nil {
		t.Fatalf("genuine answer: %v", err)
	}
	for name, body := range map[string]string{
		"qr swapped":      strings.Replace(ok, "good", "evil", 1),
		"whitespace":      strings.Replace(ok, `"code":`, `"code": `, 1),
		"unsigned":        `{"` + responseKey + `":` + resp + `}`,
		"signed by other": `{"` + responseKey + `":` + resp + `,"sign":"` + base64.StdEncoding.EncodeToString(mustSign(t, k.stranger, resp)) + `"}`,
		"not JSON":        `<html>`,
		"no object":       `{"sign":"x"}`,
	} {
		if _, err := readAnswer([]byte(body), &k.ali.PublicKey); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPrepayInputRefused(t *testing.T) {
	_, p, cfg := newFake(t)
	k := genKeys(t)
	withCfg := func(change func(*payment.AlipayConfig)) []byte {
		var c payment.AlipayConfig
		json.Unmarshal(cfg, &c)
		change(&c)
		b, _ := json.Marshal(c)
		return b
	}
	for name, tc := range map[string]struct {
		cfg []byte
		o   payment.Prepay
	}{
		"zero amount":      {cfg, payment.Prepay{OrderNo: "TP1", AmountCents: 0}},
		"negative amount":  {cfg, payment.Prepay{OrderNo: "TP1", AmountCents: -1}},
		"over the limit":   {cfg, payment.Prepay{OrderNo: "TP1", AmountCents: maxFen + 1}},
		"bad order number": {cfg, payment.Prepay{OrderNo: "TP1\x00", AmountCents: 1}},
		"no private key":   {withCfg(func(c *payment.AlipayConfig) { c.PrivateKey = "" }), testPrepay},
		"no public key":    {withCfg(func(c *payment.AlipayConfig) { c.PublicKey = "" }), testPrepay},
		"missing key file": {withCfg(func(c *payment.AlipayConfig) { c.PrivateKey, c.PrivateKeyFile = "", "/nonexistent/key.pem" }), testPrepay},
		"public as private": {withCfg(func(c *payment.AlipayConfig) {
			c.PrivateKey = pkixPEM(t, &k.app.PublicKey)
		}), testPrepay},
		"no app_id":     {withCfg(func(c *payment.AlipayConfig) { c.AppID = "" }), testPrepay},
		"no notify_url": {withCfg(func(c *payment.AlipayConfig) { c.NotifyURL = "" }), testPrepay},
		"bad gateway":   {withCfg(func(c *payment.AlipayConfig) { c.Gateway = "ftp://x" }), testPrepay},
		"not JSON":      {[]byte("{"), testPrepay},
	} {
		if _, err := p.Prepay(context.Background(), tc.cfg, tc.o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestYuan(t *testing.T) {
	for _, tc := range []struct {
		s   string
		fen int64
		ok  bool
	}{
		{"12.34", 1234, true}, {"12.3", 1230, true}, {"12", 1200, true}, {"0.01", 1, true},
		{"0", 0, true}, {"9999999999999.99", 999999999999999, true},
		{"12.345", 0, false}, {"-1.00", 0, false}, {"+1.00", 0, false}, {"1e3", 0, false},
		{"01.00", 0, false}, {" 1.00", 0, false}, {"1.00 ", 0, false}, {"1.", 0, false},
		{".5", 0, false}, {"NaN", 0, false}, {"Inf", 0, false}, {"", 0, false}, {"1,00", 0, false},
		{"99999999999999.00", 0, false}, {"1e308", 0, false}, {"１.00", 0, false},
	} {
		got, err := ParseYuan(tc.s)
		if (err == nil) != tc.ok || got != tc.fen {
			t.Errorf("ParseYuan(%q) = %d, %v", tc.s, got, err)
		}
	}
	for fen, want := range map[int64]string{1: "0.01", 1234: "12.34", 100: "1.00", maxFen: "100000000.00"} {
		if got := FormatYuan(fen); got != want {
			t.Errorf("FormatYuan(%d) = %s, want %s", fen, got, want)
		}
	}
}

func TestSubject(t *testing.T) {
	long := strings.Repeat("充", 300)
	if got := subject(long, "TP1"); got != strings.Repeat("充", maxSubject) {
		t.Errorf("subject cut to %d runes", len([]rune(got)))
	}
	if got := subject("\x00", "TP1"); got != "TP1" {
		t.Errorf("subject of NUL = %q", got)
	}
}
