package paytest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// AlipayTrade is a trade the Alipay fake holds, by out_trade_no.
type AlipayTrade struct {
	OrderNo       string
	TotalCents    int64
	Status        string // "" (precreated, not scanned: Alipay has no trade yet), WAIT_BUYER_PAY, TRADE_SUCCESS, TRADE_FINISHED, TRADE_CLOSED
	TradeNo       string // set when scanned
	RefundedCents int64
}

// AlipayRefund is a refund the Alipay fake made.
type AlipayRefund struct {
	OrderNo, RequestNo string
	AmountCents        int64
}

// Alipay is a fake of the Alipay OpenAPI gateway (public-key mode, RSA2):
// alipay.trade.precreate, .query, .close and .refund. It holds the app's
// key pair (the config's private_key; it verifies requests with the
// public half, as Alipay does with the uploaded app public key) and its
// own (it signs answers and notifications; the config's public_key).
type Alipay struct {
	AppID string
	URL   string // the gateway (config "gateway")

	// Answer, when set and answering non-empty, replaces the response
	// object (JSON) of a verified request of method; the fake signs it.
	Answer func(method string, biz map[string]any) string
	// Tamper, when set, changes the whole answer body after signing.
	Tamper func(method string, body string) string

	appKey, aliKey *rsa.PrivateKey
	srv            *httptest.Server
	mu             sync.Mutex
	trades         map[string]*AlipayTrade
	refunds        map[string]AlipayRefund // by out_trade_no + "|" + out_request_no
	calls          map[string]int
	requests       map[string]url.Values
	seq            int
}

// NewAlipay starts an Alipay fake for the test's lifetime.
func NewAlipay(tb testing.TB) *Alipay {
	tb.Helper()
	a := &Alipay{
		AppID: "2021000000000001", appKey: genKey(tb), aliKey: genKey(tb),
		trades: map[string]*AlipayTrade{}, refunds: map[string]AlipayRefund{},
		calls: map[string]int{}, requests: map[string]url.Values{},
	}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	tb.Cleanup(a.srv.Close)
	a.URL = a.srv.URL + "/gateway.do"
	return a
}

// Client is an HTTP client for the fake.
func (a *Alipay) Client() *http.Client { return a.srv.Client() }

// AppPrivateKeyPEM is the app private key (PKCS#1 PEM) the config holds.
func (a *Alipay) AppPrivateKeyPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(a.appKey)}))
}

// AlipayPublicKeyPEM is "Alipay's" public key (PKIX PEM) the config holds.
func (a *Alipay) AlipayPublicKeyPEM() string {
	der, _ := x509.MarshalPKIXPublicKey(&a.aliKey.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// Config is the mobile_b channel configuration for this fake.
func (a *Alipay) Config(notifyURL string) map[string]any {
	return map[string]any{"app_id": a.AppID, "private_key": a.AppPrivateKeyPEM(),
		"public_key": a.AlipayPublicKeyPEM(), "notify_url": notifyURL, "gateway": a.URL}
}

// ConfigJSON is Config as the stored JSON.
func (a *Alipay) ConfigJSON(notifyURL string) []byte {
	b, _ := json.Marshal(a.Config(notifyURL))
	return b
}

// AddTrade puts a precreated trade at the fake (not scanned yet).
func (a *Alipay) AddTrade(orderNo string, cents int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trades[orderNo] = &AlipayTrade{OrderNo: orderNo, TotalCents: cents}
}

// SetStatus sets a held trade's trade_status ("" = not scanned); any
// other status gives it a trade_no. It reports whether the trade exists.
func (a *Alipay) SetStatus(orderNo, status string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.trades[orderNo]
	if ok {
		t.Status = status
		if status != "" && t.TradeNo == "" {
			a.seq++
			t.TradeNo = fmt.Sprintf("2026112722001%015d", a.seq)
		}
	}
	return ok
}

// Pay marks the trade paid (TRADE_SUCCESS) and answers the asynchronous
// notification Alipay would POST to notify_url (form, RSA2 by Alipay).
func (a *Alipay) Pay(tb testing.TB, orderNo string) string {
	tb.Helper()
	if !a.SetStatus(orderNo, "TRADE_SUCCESS") {
		tb.Fatalf("alipay fake: no trade %s", orderNo)
	}
	return a.Notification(orderNo)
}

// Notification is the signed notification of a trade's current status.
func (a *Alipay) Notification(orderNo string) string {
	t, _ := a.Trade(orderNo)
	amount := yuan(t.TotalCents)
	v := url.Values{
		"notify_time": {"2026-11-27 12:00:00"}, "notify_type": {"trade_status_sync"}, "notify_id": {"ac05099524730693a8b330c5ecf72da9786"},
		"app_id": {a.AppID}, "charset": {"utf-8"}, "version": {"1.0"}, "trade_no": {t.TradeNo}, "out_trade_no": {orderNo},
		"trade_status": {t.Status}, "total_amount": {amount}, "receipt_amount": {amount}, "buyer_pay_amount": {amount},
		"gmt_payment": {"2026-11-27 12:00:00"}, "subject": {orderNo}, "buyer_id": {"2088102122524333"},
	}
	// A notification is signed over every parameter but sign and sign_type.
	v.Set("sign", a.sign(alipaySignContent(v, "sign")))
	v.Set("sign_type", "RSA2")
	return v.Encode()
}

// Trade answers the held trade of orderNo.
func (a *Alipay) Trade(orderNo string) (AlipayTrade, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.trades[orderNo]
	if !ok {
		return AlipayTrade{}, false
	}
	return *t, true
}

// Refunds answers the refunds made for orderNo, in no order.
func (a *Alipay) Refunds(orderNo string) []AlipayRefund {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []AlipayRefund
	for _, r := range a.refunds {
		if r.OrderNo == orderNo {
			out = append(out, r)
		}
	}
	return out
}

// Calls counts the requests of method (verified or not).
func (a *Alipay) Calls(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[method]
}

// LastRequest is the last verified request of method.
func (a *Alipay) LastRequest(method string) url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[method]
}

// Sign is "Alipay's" RSA2 signature of content, for tests that forge or
// build their own answers.
func (a *Alipay) Sign(content string) string { return a.sign(content) }

func (a *Alipay) sign(content string) string {
	sum := sha256.Sum256([]byte(content))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, a.aliKey, crypto.SHA256, sum[:])
	return base64.StdEncoding.EncodeToString(sig)
}

// alipaySignContent is the sorted k=v&… of v's parameters, without the
// skipped keys and (for requests; a notification has none) empty values.
func alipaySignContent(v url.Values, skip ...string) string {
	var keys []string
	for k := range v {
		if v.Get(k) != "" && !contains(skip, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + v.Get(k)
	}
	return strings.Join(parts, "&")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (a *Alipay) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	form, err := url.ParseQuery(string(body))
	method := form.Get("method")
	a.mu.Lock()
	a.calls[method]++
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/html;charset=utf-8")
	if err != nil || r.Method != http.MethodPost {
		io.WriteString(w, `{"error_response":{"code":"40001","msg":"Missing Required Arguments"}}`)
		return
	}
	if e := a.checkRequest(form); e != "" {
		io.WriteString(w, `{"error_response":`+e+`}`)
		return
	}
	var biz map[string]any
	if err := json.Unmarshal([]byte(form.Get("biz_content")), &biz); err != nil {
		io.WriteString(w, `{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-biz-content","sub_msg":"biz_content格式错误"}}`)
		return
	}
	a.mu.Lock()
	a.requests[method] = form
	a.mu.Unlock()
	var resp string
	if a.Answer != nil {
		resp = a.Answer(method, biz)
	}
	if resp == "" {
		a.mu.Lock()
		resp = a.handle(method, biz)
		a.mu.Unlock()
	}
	key := strings.ReplaceAll(method, ".", "_") + "_response"
	out := `{"` + key + `":` + resp + `,"sign":"` + a.sign(resp) + `"}`
	if a.Tamper != nil {
		out = a.Tamper(method, out)
	}
	io.WriteString(w, out)
}

var alipayTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

// checkRequest verifies a request as the gateway does; it answers the
// error_response object of a refusal, or "".
func (a *Alipay) checkRequest(v url.Values) string {
	invalid := func(sub, msg string) string {
		return fmt.Sprintf(`{"code":"40002","msg":"Invalid Arguments","sub_code":%q,"sub_msg":%q}`, sub, msg)
	}
	for k, vs := range v {
		if len(vs) != 1 {
			return invalid("isv.invalid-parameter", "参数重复"+k)
		}
	}
	switch {
	case v.Get("app_id") != a.AppID:
		return invalid("isv.invalid-app-id", "无效的AppID参数")
	case v.Get("sign_type") != "RSA2":
		return invalid("isv.invalid-signature-type", "无效的签名类型")
	case v.Get("charset") != "utf-8" || v.Get("format") != "JSON" || v.Get("version") != "1.0":
		return invalid("isv.invalid-charset", "字符集、格式或版本错误")
	case !alipayTimestamp.MatchString(v.Get("timestamp")):
		return invalid("isv.invalid-timestamp", "非法的时间戳参数")
	}
	if _, err := time.Parse("2006-01-02 15:04:05", v.Get("timestamp")); err != nil {
		return invalid("isv.invalid-timestamp", "非法的时间戳参数")
	}
	sig, err := base64.StdEncoding.DecodeString(v.Get("sign"))
	sum := sha256.Sum256([]byte(alipaySignContent(v, "sign")))
	if err != nil || rsa.VerifyPKCS1v15(&a.appKey.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return invalid("isv.invalid-signature", "验签出错")
	}
	return ""
}

// handle answers the response object of a verified request (a.mu held).
func (a *Alipay) handle(method string, biz map[string]any) string {
	str := func(k string) string { s, _ := biz[k].(string); return s }
	no := str("out_trade_no")
	t, held := a.trades[no]
	exists := held && t.Status != ""
	failed := func(sub, msg string) string {
		return fmt.Sprintf(`{"code":"40004","msg":"Business Failed","sub_code":%q,"sub_msg":%q,"out_trade_no":%q}`, sub, msg, no)
	}
	switch method {
	case "alipay.trade.precreate":
		cents, ok := parseYuan(str("total_amount"))
		if !ok || no == "" || str("subject") == "" {
			return failed("ACQ.INVALID_PARAMETER", "参数无效")
		}
		if exists && t.Status != "WAIT_BUYER_PAY" {
			return failed("ACQ.TRADE_HAS_SUCCESS", "交易已被支付")
		}
		if !held {
			a.trades[no] = &AlipayTrade{OrderNo: no, TotalCents: cents}
		}
		return fmt.Sprintf(`{"code":"10000","msg":"Success","out_trade_no":%q,"qr_code":"https:\/\/qr.alipay.com\/bax0%s"}`, no, no)
	case "alipay.trade.query":
		if !exists {
			return failed("ACQ.TRADE_NOT_EXIST", "交易不存在")
		}
		return fmt.Sprintf(`{"code":"10000","msg":"Success","trade_no":%q,"out_trade_no":%q,"buyer_logon_id":"159****5620","trade_status":%q,"total_amount":%q}`,
			t.TradeNo, no, t.Status, yuan(t.TotalCents))
	case "alipay.trade.close":
		if !exists {
			return failed("ACQ.TRADE_NOT_EXIST", "交易不存在")
		}
		if t.Status != "WAIT_BUYER_PAY" {
			return failed("ACQ.TRADE_STATUS_ERROR", "交易状态不合法")
		}
		t.Status = "TRADE_CLOSED"
		return fmt.Sprintf(`{"code":"10000","msg":"Success","trade_no":%q,"out_trade_no":%q}`, t.TradeNo, no)
	case "alipay.trade.refund":
		return a.refund(t, exists, str, failed)
	}
	return `{"code":"40004","msg":"Business Failed","sub_code":"isv.invalid-method","sub_msg":"不存在的方法名"}`
}

func (a *Alipay) refund(t *AlipayTrade, exists bool, str func(string) string, failed func(string, string) string) string {
	if !exists || (str("trade_no") != "" && str("trade_no") != t.TradeNo) {
		return failed("ACQ.TRADE_NOT_EXIST", "交易不存在")
	}
	cents, ok := parseYuan(str("refund_amount"))
	reqNo := str("out_request_no")
	if !ok || cents <= 0 || reqNo == "" {
		return failed("ACQ.INVALID_PARAMETER", "参数无效")
	}
	done := func(change string) string {
		return fmt.Sprintf(`{"code":"10000","msg":"Success","trade_no":%q,"out_trade_no":%q,"buyer_logon_id":"159****5620","fund_change":%q,"refund_fee":%q,"gmt_refund_pay":"2026-11-27 12:00:00"}`,
			t.TradeNo, t.OrderNo, change, yuan(t.RefundedCents))
	}
	key := t.OrderNo + "|" + reqNo
	if prev, seen := a.refunds[key]; seen {
		if prev.AmountCents != cents {
			return failed("ACQ.REFUND_AMT_NOT_EQUAL_TOTAL", "退款金额与同一退款请求号的金额不一致")
		}
		return done("N") // out_request_no deduplicates
	}
	if t.Status != "TRADE_SUCCESS" { // unpaid, closed, or TRADE_FINISHED (no longer refundable)
		return failed("ACQ.TRADE_STATUS_ERROR", "交易状态不合法")
	}
	if t.RefundedCents+cents > t.TotalCents {
		return failed("ACQ.REFUND_AMT_NOT_EQUAL_TOTAL", "退款金额超限")
	}
	a.refunds[key] = AlipayRefund{OrderNo: t.OrderNo, RequestNo: reqNo, AmountCents: cents}
	t.RefundedCents += cents
	if t.RefundedCents == t.TotalCents {
		t.Status = "TRADE_CLOSED" // Alipay closes a trade refunded in full
	}
	return done("Y")
}

var alipayAmount = regexp.MustCompile(`^(0|[1-9]\d{0,9})(\.\d{1,2})?$`)

// parseYuan reads an amount as Alipay does: yuan, at most two decimals,
// at most 100,000,000.00.
func parseYuan(s string) (int64, bool) {
	if !alipayAmount.MatchString(s) {
		return 0, false
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "00")[:2]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	c := w*100 + f
	return c, c <= 100_000_000_00
}

func yuan(cents int64) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }
