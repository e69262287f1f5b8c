package api_test

import (
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// The real wallet providers end to end: a top-up paid through a local fake
// of each provider's API, its notification signed as the provider signs it
// (by this test's own code and keys, not the providers'), credited once
// under 20 parallel deliveries; forged and tampered notifications change
// nothing.

// wechatSign is WeChat Pay v2's MD5 signature of fields under key.
func wechatSign(fields map[string]string, key string) string {
	var keys []string
	for k, v := range fields {
		if k != "sign" && v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + fields[k] + "&")
	}
	b.WriteString("key=" + key)
	sum := md5.Sum([]byte(b.String()))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func wechatXML(fields map[string]string) string {
	var b strings.Builder
	b.WriteString("<xml>")
	for k, v := range fields {
		var esc strings.Builder
		xml.EscapeText(&esc, []byte(v))
		fmt.Fprintf(&b, "<%s>%s</%s>", k, esc.String(), k)
	}
	b.WriteString("</xml>")
	return b.String()
}

func balanceOf(t *testing.T, root *apptest.Client, id int64) int64 {
	t.Helper()
	var u apptest.UserInfo
	root.OK("GET", apptest.Path("/api/user/%d", id), nil).Decode(t, &u)
	return u.Quota
}

// postNotify delivers body to the notify route n times in parallel and
// returns the replies.
func postNotify(t *testing.T, e *apptest.Env, method, contentType, body string, n int) []string {
	t.Helper()
	replies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := http.Post(e.Server.URL+"/api/payment/"+method+"/notify", contentType, strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			replies[i] = string(b)
		})
	}
	wg.Wait()
	return replies
}

func TestWechatTopupEndToEnd(t *testing.T) {
	apptest.Parallel(t)
	const appID, mchID, apiKey = "wx-test-app", "1900000109", "0123456789abcdef0123456789abcdef"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pay/unifiedorder" {
			http.NotFound(w, r)
			return
		}
		answer := map[string]string{"return_code": "SUCCESS", "result_code": "SUCCESS", "appid": appID, "mch_id": mchID,
			"nonce_str": "n0nce", "prepay_id": "wx-prepay-1", "trade_type": "NATIVE", "code_url": "weixin://wxpay/bizpayurl?pr=abc"}
		answer["sign"] = wechatSign(answer, apiKey)
		io.WriteString(w, wechatXML(answer))
	}))
	defer fake.Close()

	e := apptest.New(t, "METRICS_TOKEN", apptest.MetricsToken)
	root := e.Root()
	u, uid := e.NewUser("wxbuyer", user.RoleUser)
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{
		"app_id": appID, "mch_id": mchID, "api_key": apiKey, "notify_url": e.Server.URL + "/api/payment/mobile_a/notify", "gateway": fake.URL}})
	topupOn(root)
	a := topup(t, u, map[string]any{"amount": 12.34, "pay_method": "mobile_a"})
	if a.Pay.Status != "success" || a.Pay.QRCode != "weixin://wxpay/bizpayurl?pr=abc" || a.Pay.TradeNo != "wx-prepay-1" {
		t.Fatalf("pay %+v", a.Pay)
	}
	before := balanceOf(t, root, uid)

	notify := func(fee string, tamper bool) string {
		f := map[string]string{"appid": appID, "mch_id": mchID, "nonce_str": "n2", "return_code": "SUCCESS", "result_code": "SUCCESS",
			"out_trade_no": a.Order.OrderNo, "total_fee": fee, "fee_type": "CNY", "transaction_id": "4200000001", "trade_type": "NATIVE"}
		f["sign"] = wechatSign(f, apiKey)
		if tamper {
			f["total_fee"] = "1"
		}
		return wechatXML(f)
	}
	// Refused: a tampered amount (signature broken), a genuine signature
	// over the wrong amount, a foreign merchant's key.
	for name, body := range map[string]string{"tampered": notify("1234", true), "wrong amount": notify("1000", false)} {
		if r := postNotify(t, e, "mobile_a", "text/xml", body, 1)[0]; !strings.Contains(r, "FAIL") {
			t.Errorf("%s: reply %q, want FAIL", name, r)
		}
	}
	if got := balanceOf(t, root, uid); got != before {
		t.Fatalf("refused notifications moved the balance: %d → %d", before, got)
	}
	// Genuine, delivered 20 times at once: credited once.
	for i, r := range postNotify(t, e, "mobile_a", "text/xml", notify("1234", false), 20) {
		if !strings.Contains(r, "SUCCESS") {
			t.Errorf("delivery %d: reply %q", i, r)
		}
	}
	if got := balanceOf(t, root, uid); got != before+12_340_000 {
		t.Fatalf("balance %d, want %d + 12,340,000 once", got, before)
	}
	// Every callback is counted, the refused ones by reason.
	m := e.Scrape()
	for _, c := range []struct {
		outcome, reason string
		want            float64
	}{{"accepted", "none", 20}, {"rejected", "not_verified", 1}, {"rejected", "amount_mismatch", 1}} {
		got, _ := m.Value("modelgate_payment_callbacks_total", "provider", "mobile_a", "outcome", c.outcome, "reason", c.reason)
		if got != c.want {
			t.Errorf("payment callbacks %s/%s: %v, want %v", c.outcome, c.reason, got, c.want)
		}
	}
}

func TestAlipayTopupEndToEnd(t *testing.T) {
	apptest.Parallel(t)
	appKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	aliKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	appPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey)})
	aliPub, _ := x509.MarshalPKIXPublicKey(&aliKey.PublicKey)
	aliPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: aliPub})
	rsa2 := func(content string) string {
		sum := sha256.Sum256([]byte(content))
		sig, _ := rsa.SignPKCS1v15(rand.Reader, aliKey, crypto.SHA256, sum[:])
		return base64.StdEncoding.EncodeToString(sig)
	}
	const appID = "2021000000000001"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		var biz struct {
			OutTradeNo string `json:"out_trade_no"`
		}
		json.Unmarshal([]byte(r.Form.Get("biz_content")), &biz)
		resp := fmt.Sprintf(`{"code":"10000","msg":"Success","out_trade_no":%q,"qr_code":"https://qr.alipay.com/bax0001"}`, biz.OutTradeNo)
		fmt.Fprintf(w, `{"alipay_trade_precreate_response":%s,"sign":%q}`, resp, rsa2(resp))
	}))
	defer fake.Close()

	e := apptest.New(t)
	root := e.Root()
	u, uid := e.NewUser("alibuyer", user.RoleUser)
	root.OK("PUT", "/api/setting/payment/mobile_b", map[string]any{"enabled": true, "config": map[string]any{
		"app_id": appID, "private_key": string(appPEM), "public_key": string(aliPubPEM),
		"notify_url": e.Server.URL + "/api/payment/mobile_b/notify", "gateway": fake.URL}})
	topupOn(root)
	a := topup(t, u, map[string]any{"amount": 5.01, "pay_method": "mobile_b"})
	if a.Pay.Status != "success" || a.Pay.QRCode != "https://qr.alipay.com/bax0001" {
		t.Fatalf("pay %+v", a.Pay)
	}
	before := balanceOf(t, root, uid)

	notify := func(amount, app string, tamper bool) string {
		v := url.Values{"app_id": {app}, "out_trade_no": {a.Order.OrderNo}, "trade_no": {"2026112422001"},
			"trade_status": {"TRADE_SUCCESS"}, "total_amount": {amount}, "notify_id": {"n1"}, "charset": {"utf-8"}}
		var keys []string
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+v.Get(k))
		}
		v.Set("sign", rsa2(strings.Join(parts, "&")))
		v.Set("sign_type", "RSA2")
		if tamper {
			v.Set("total_amount", "0.01")
		}
		return v.Encode()
	}
	for name, body := range map[string]string{
		"tampered":     notify("5.01", appID, true),
		"wrong amount": notify("5.00", appID, false),
		"foreign app":  notify("5.01", "2021999999999999", false),
	} {
		if r := postNotify(t, e, "mobile_b", "application/x-www-form-urlencoded", body, 1)[0]; r != "fail" {
			t.Errorf("%s: reply %q, want fail", name, r)
		}
	}
	if got := balanceOf(t, root, uid); got != before {
		t.Fatalf("refused notifications moved the balance: %d → %d", before, got)
	}
	for i, r := range postNotify(t, e, "mobile_b", "application/x-www-form-urlencoded", notify("5.01", appID, false), 20) {
		if r != "success" {
			t.Errorf("delivery %d: reply %q", i, r)
		}
	}
	if got := balanceOf(t, root, uid); got != before+5_010_000 {
		t.Fatalf("balance %d, want %d + 5,010,000 once", got, before)
	}
}
