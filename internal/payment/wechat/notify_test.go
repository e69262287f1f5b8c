package wechat

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/payment"
)

// paidFields is a payment notification as WeChat sends it (API v2,
// 支付结果通知), unsigned.
func paidFields(signType string) map[string]string {
	f := map[string]string{
		"appid": testAppID, "mch_id": testMchID, "bank_type": "CFT", "cash_fee": "1234",
		"fee_type": "CNY", "is_subscribe": "N", "nonce_str": "5d2b6c2a8db53831f7eda20af46e531c",
		"openid": "oUpF8uMEb4qRXf22hE3X68TekukE", "out_trade_no": "TP20261124000001",
		"result_code": "SUCCESS", "return_code": "SUCCESS", "time_end": "20261124091010",
		"total_fee": "1234", "trade_type": "NATIVE", "transaction_id": "4200000000202611240000000001",
	}
	if signType != "" {
		f["sign_type"] = signType
	}
	return f
}

func signed(t *testing.T, f map[string]string, key string) string {
	t.Helper()
	s, err := sign(f, f["sign_type"], key)
	if err != nil {
		t.Fatal(err)
	}
	f["sign"] = s
	return string(encodeXML(f))
}

func notify(t *testing.T, body string) (payment.Paid, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/payment/mobile_a/notify", strings.NewReader(body))
	return New(nil).Notify(r, testConfig(t, "", ""))
}

func TestNotifyGenuine(t *testing.T) {
	for _, signType := range []string{"", SignMD5, SignHMACSHA256} {
		paid, err := notify(t, signed(t, paidFields(signType), testAPIKey))
		if err != nil {
			t.Fatalf("%q: %v", signType, err)
		}
		want := payment.Paid{Method: payment.MethodWechat, OrderNo: "TP20261124000001", AmountCents: 1234, TradeNo: "4200000000202611240000000001"}
		if paid != want {
			t.Errorf("%q: paid = %+v, want %+v", signType, paid, want)
		}
	}
	// WeChat wraps values in CDATA; that reads the same.
	f := paidFields("")
	s, _ := sign(f, "", testAPIKey)
	var b strings.Builder
	b.WriteString("<xml>\n")
	for k, v := range f {
		b.WriteString("<" + k + "><![CDATA[" + v + "]]></" + k + ">\n")
	}
	b.WriteString("<sign><![CDATA[" + s + "]]></sign></xml>")
	if _, err := notify(t, b.String()); err != nil {
		t.Errorf("CDATA notification: %v", err)
	}
}

func TestNotifyRejected(t *testing.T) {
	edit := func(signType string, change func(map[string]string), key string) string {
		f := paidFields(signType)
		change(f)
		return signed(t, f, key)
	}
	tamper := func(k, v string) string {
		// signed first, then changed: the signature no longer matches
		f := paidFields("")
		signed(t, f, testAPIKey)
		f[k] = v
		return string(encodeXML(f))
	}
	none := func(map[string]string) {}
	cases := map[string]string{
		"wrong key MD5":          edit("", none, "0000000000000000000000000000000a"),
		"wrong key HMAC":         edit(SignHMACSHA256, none, "0000000000000000000000000000000a"),
		"sign type switched":     strings.Replace(edit(SignHMACSHA256, none, testAPIKey), "HMAC-SHA256", "MD5", 1),
		"unknown sign type":      strings.Replace(edit(SignMD5, none, testAPIKey), ">MD5<", ">RSA<", 1),
		"amount tampered":        tamper("total_fee", "1"),
		"order tampered":         tamper("out_trade_no", "TP20261124000002"),
		"unsigned":               string(encodeXML(paidFields(""))),
		"foreign appid":          edit("", func(f map[string]string) { f["appid"] = "wxother" }, testAPIKey),
		"foreign mch_id":         edit("", func(f map[string]string) { f["mch_id"] = "1900000999" }, testAPIKey),
		"result FAIL":            edit("", func(f map[string]string) { f["result_code"] = "FAIL" }, testAPIKey),
		"return FAIL":            edit("", func(f map[string]string) { f["return_code"] = "FAIL" }, testAPIKey),
		"foreign currency":       edit("", func(f map[string]string) { f["fee_type"] = "USD" }, testAPIKey),
		"amount zero":            edit("", func(f map[string]string) { f["total_fee"] = "0" }, testAPIKey),
		"amount negative":        edit("", func(f map[string]string) { f["total_fee"] = "-1234" }, testAPIKey),
		"amount decimal":         edit("", func(f map[string]string) { f["total_fee"] = "12.34" }, testAPIKey),
		"amount overflow":        edit("", func(f map[string]string) { f["total_fee"] = "99999999999999999999" }, testAPIKey),
		"no transaction_id":      edit("", func(f map[string]string) { delete(f, "transaction_id") }, testAPIKey),
		"NUL in value":           edit("", func(f map[string]string) { f["attach"] = "a\x00b" }, testAPIKey),
		"invalid UTF-8":          edit("", func(f map[string]string) { f["attach"] = "a\xffb" }, testAPIKey),
		"raw NUL":                "<xml><return_code>SUCCESS\x00</return_code></xml>",
		"raw invalid UTF-8":      "<xml><return_code>SUCCESS\xff</return_code></xml>",
		"malformed XML":          "<xml><appid>wx",
		"not XML":                "appid=wx&mch_id=1",
		"empty":                  "",
		"two roots":              "<xml></xml><xml></xml>",
		"nested element":         "<xml><appid><x>1</x></appid></xml>",
		"wrong root":             "<root><appid>1</appid></root>",
		"repeated field":         "<xml><total_fee>1</total_fee><total_fee>2</total_fee></xml>",
		"entity declaration":     `<!DOCTYPE xml [<!ENTITY x "1">]><xml><total_fee>&x;</total_fee></xml>`,
		"external entity":        `<!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><a>&x;</a></xml>`,
		"oversized body":         "<xml><attach>" + strings.Repeat("a", MaxBodyBytes) + "</attach></xml>",
		"too many fields":        "<xml>" + manyFields(maxFields+1) + "</xml>",
		"text outside root":      "junk<xml></xml>",
		"signed by a stranger":   edit("", func(f map[string]string) { f["appid"] = "wxother"; f["mch_id"] = "1" }, "strangerkey"),
		"valid but other config": edit("", none, testAPIKey+"x"),
	}
	for name, body := range cases {
		if paid, err := notify(t, body); err == nil {
			t.Errorf("%s: accepted as %+v", name, paid)
		}
	}
}

func manyFields(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("<f")
		b.WriteString(strings.Repeat("x", i%5+1))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strings.Repeat("y", i/26))
		b.WriteString(">1</f")
		b.WriteString(strings.Repeat("x", i%5+1))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strings.Repeat("y", i/26))
		b.WriteString(">")
	}
	return b.String()
}

func TestNotifyBadConfig(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(signed(t, paidFields(""), testAPIKey)))
	if _, err := New(nil).Notify(r, []byte(`{"app_id":"`+testAppID+`","mch_id":"`+testMchID+`"}`)); err == nil {
		t.Error("notification accepted without an api_key in the config")
	}
}

func TestReply(t *testing.T) {
	for ok, want := range map[bool]string{
		true:  "<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>",
		false: "<xml><return_code><![CDATA[FAIL]]></return_code><return_msg><![CDATA[FAIL]]></return_msg></xml>",
	} {
		w := httptest.NewRecorder()
		New(nil).Reply(w, ok)
		if w.Body.String() != want || w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/xml") {
			t.Errorf("reply %v = %d %q %q", ok, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
}

// One Provider serves every notification at once: it keeps no state, so
// parallel identical notifications all verify alike (run with -race).
func TestNotifyParallel(t *testing.T) {
	body := signed(t, paidFields(SignHMACSHA256), testAPIKey)
	p, cfg := New(nil), testConfig(t, "", "")
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
