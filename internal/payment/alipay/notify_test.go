package alipay

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/payment"
)

func mustSign(t *testing.T, k *rsa.PrivateKey, s string) []byte {
	t.Helper()
	sum := sha256.Sum256([]byte(s))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// paidValues is an asynchronous notification as Alipay sends it (异步通知
// 参数), unsigned.
func paidValues() url.Values {
	return url.Values{
		"notify_time": {"2026-11-24 09:10:10"}, "notify_type": {"trade_status_sync"},
		"notify_id": {"ac05099524730693a8b330c5ecf72da9786"}, "charset": {"utf-8"}, "version": {"1.0"},
		"app_id": {testAppID}, "trade_no": {"2026112422001400000000000001"}, "out_trade_no": {"TP20261124000001"},
		"buyer_id": {"2088102122524333"}, "seller_id": {"2088101106499364"}, "trade_status": {"TRADE_SUCCESS"},
		"total_amount": {"12.34"}, "receipt_amount": {"12.34"}, "buyer_pay_amount": {"12.34"},
		"subject": {"充值 12.34 & <more>"}, "gmt_create": {"2026-11-24 09:09:50"}, "gmt_payment": {"2026-11-24 09:10:09"},
		"fund_bill_list": {`[{"amount":"12.34","fundChannel":"ALIPAYACCOUNT"}]`}, "passback_params": {""},
	}
}

// signedBy signs v as Alipay does, with the independent library holding
// key, and answers the form body.
func signedBy(t *testing.T, key *rsa.PrivateKey, v url.Values) string {
	t.Helper()
	unsigned := url.Values{}
	for k, vs := range v {
		if k != "sign" && k != "sign_type" {
			unsigned[k] = vs
		}
	}
	sig, err := oracleClient(t, pkcs1PEM(key)).SignValues(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	v.Set("sign_type", "RSA2")
	v.Set("sign", base64.StdEncoding.EncodeToString(sig))
	return v.Encode()
}

func notify(t *testing.T, body string) (payment.Paid, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/payment/mobile_b/notify", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	return New(nil).Notify(r, testConfig(t, ""))
}

func TestNotifyGenuine(t *testing.T) {
	k := genKeys(t)
	for _, status := range []string{"TRADE_SUCCESS", "TRADE_FINISHED"} {
		v := paidValues()
		v.Set("trade_status", status)
		body := signedBy(t, k.ali, v)
		paid, err := notify(t, body)
		if err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		want := payment.Paid{Method: payment.MethodAlipay, OrderNo: "TP20261124000001", AmountCents: 1234, TradeNo: "2026112422001400000000000001"}
		if paid != want {
			t.Errorf("paid = %+v, want %+v", paid, want)
		}
		// The independent library agrees the notification is genuine.
		c := oracleClient(t, pkcs1PEM(k.app))
		if err := c.LoadAliPayPublicKey(pkixPEM(t, &k.ali.PublicKey)); err != nil {
			t.Fatal(err)
		}
		form, _ := url.ParseQuery(body)
		if _, err := c.DecodeNotification(context.Background(), form); err != nil {
			t.Errorf("oracle rejects the notification: %v", err)
		}
	}
}

func TestNotifyRejected(t *testing.T) {
	k := genKeys(t)
	edit := func(change func(url.Values)) string {
		v := paidValues()
		change(v)
		return signedBy(t, k.ali, v)
	}
	tamper := func(key, value string) string {
		body := signedBy(t, k.ali, paidValues())
		v, _ := url.ParseQuery(body)
		v.Set(key, value)
		return v.Encode()
	}
	none := func(url.Values) {}
	genuine := edit(none)
	cases := map[string]string{
		"signed by a stranger":   signedBy(t, k.stranger, paidValues()),
		"signed with app key":    signedBy(t, k.app, paidValues()),
		"amount tampered":        tamper("total_amount", "0.01"),
		"order tampered":         tamper("out_trade_no", "TP20261124000002"),
		"status tampered":        strings.Replace(edit(func(v url.Values) { v.Set("trade_status", "WAIT_BUYER_PAY") }), "WAIT_BUYER_PAY", "TRADE_SUCCESS", 1),
		"empty param dropped":    strings.Replace(genuine, "passback_params=&", "", 1),
		"param added":            genuine + "&extra=1",
		"sign not base64":        tamper("sign", "!!!"),
		"unsigned":               paidValues().Encode(),
		"sign_type RSA":          tamper("sign_type", "RSA"),
		"foreign app_id":         edit(func(v url.Values) { v.Set("app_id", "2021000000000999") }),
		"waiting":                edit(func(v url.Values) { v.Set("trade_status", "WAIT_BUYER_PAY") }),
		"closed":                 edit(func(v url.Values) { v.Set("trade_status", "TRADE_CLOSED") }),
		"amount three places":    edit(func(v url.Values) { v.Set("total_amount", "12.345") }),
		"amount negative":        edit(func(v url.Values) { v.Set("total_amount", "-12.34") }),
		"amount zero":            edit(func(v url.Values) { v.Set("total_amount", "0.00") }),
		"amount exponent":        edit(func(v url.Values) { v.Set("total_amount", "1e308") }),
		"amount NaN":             edit(func(v url.Values) { v.Set("total_amount", "NaN") }),
		"amount huge":            edit(func(v url.Values) { v.Set("total_amount", "92233720368547758.07") }),
		"no trade_no":            edit(func(v url.Values) { v.Del("trade_no") }),
		"no out_trade_no":        edit(func(v url.Values) { v.Del("out_trade_no") }),
		"NUL in value":           edit(func(v url.Values) { v.Set("subject", "a\x00b") }),
		"invalid UTF-8":          edit(func(v url.Values) { v.Set("subject", "a\xffb") }),
		"repeated parameter":     genuine + "&total_amount=12.34",
		"malformed form":         "a=%zz&b=1",
		"semicolon form":         "a=1;b=2",
		"empty":                  "",
		"oversized body":         genuine + "&x=" + strings.Repeat("a", MaxBodyBytes),
		"too many parameters":    manyParams(maxParams + 1),
		"XML instead of a form":  "<xml><return_code>SUCCESS</return_code></xml>",
		"signature of other msg": tamper("sign", mustSignB64(t, k.ali, "app_id="+testAppID)),
	}
	for name, body := range cases {
		if paid, err := notify(t, body); err == nil {
			t.Errorf("%s: accepted as %+v", name, paid)
		}
	}
}

func mustSignB64(t *testing.T, k *rsa.PrivateKey, s string) string {
	return base64.StdEncoding.EncodeToString(mustSign(t, k, s))
}

func manyParams(n int) string {
	v := url.Values{}
	for i := range n {
		v.Set("p"+strings.Repeat("x", i), "1")
	}
	return v.Encode()
}

func TestNotifyBadConfig(t *testing.T) {
	k := genKeys(t)
	body := signedBy(t, k.ali, paidValues())
	for name, cfg := range map[string]string{
		"no public key": `{"app_id":"` + testAppID + `"}`,
		"junk key":      `{"app_id":"` + testAppID + `","public_key":"bm90IGEga2V5"}`,
		"not JSON":      `[`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		if _, err := New(nil).Notify(r, []byte(cfg)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReply(t *testing.T) {
	for ok, want := range map[bool]string{true: "success", false: "fail"} {
		w := httptest.NewRecorder()
		New(nil).Reply(w, ok)
		if w.Body.String() != want || w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
			t.Errorf("reply %v = %d %q %q", ok, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
}

// One Provider serves every notification at once: it keeps no state, so
// parallel identical notifications all verify alike (run with -race).
func TestNotifyParallel(t *testing.T) {
	body := signedBy(t, genKeys(t).ali, paidValues())
	p, cfg := New(nil), testConfig(t, "")
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			_, err := p.Notify(r, cfg)
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
