package paytest

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// WechatTrade is a trade the WeChat fake holds, by out_trade_no.
type WechatTrade struct {
	OrderNo       string
	TotalFee      int64  // fen
	State         string // trade_state: NOTPAY, SUCCESS, REFUND, CLOSED, REVOKED, USERPAYING, PAYERROR
	TransactionID string // set when paid
	RefundedFee   int64  // fen, all refunds together
}

// WechatRefund is a refund the WeChat fake accepted.
type WechatRefund struct {
	OrderNo, RefundNo, RefundID string
	TotalFee, RefundFee         int64
}

// Wechat is a fake of WeChat Pay API v2 (https://api.mch.weixin.qq.com):
// /pay/unifiedorder, /pay/orderquery, /pay/closeorder over TLS, and
// /secapi/pay/refund over mutual TLS with the merchant certificate the
// fake issued (CertFile, KeyFile). Requests are verified as WeChat does:
// the sign over the sorted non-empty fields with the API key, by the
// request's sign_type (absent: MD5); then appid and mch_id.
type Wechat struct {
	AppID, MchID, APIKey string
	URL                  string // the gateway (config "gateway")
	CertFile, KeyFile    string // the merchant API certificate (config cert_file, key_file)

	// Answer, when set and answering non-nil, replaces the fake's answer
	// to a verified request (path such as "/pay/orderquery"): its fields
	// are signed unless they carry a sign.
	Answer func(path string, req map[string]string) map[string]string
	// Tamper, when set, changes an answer after it was signed.
	Tamper func(path string, answer map[string]string)

	srv      *httptest.Server
	mu       sync.Mutex
	trades   map[string]*WechatTrade
	refunds  map[string]WechatRefund
	calls    map[string]int
	requests map[string]map[string]string
	seq      int
}

// NewWechat starts a WeChat fake for the test's lifetime.
func NewWechat(tb testing.TB) *Wechat {
	tb.Helper()
	w := &Wechat{
		AppID: "wx2421b1c4370ec43b", MchID: "10000100", APIKey: "192006250b4c09247ec02edce69f6a2d",
		trades: map[string]*WechatTrade{}, refunds: map[string]WechatRefund{},
		calls: map[string]int{}, requests: map[string]map[string]string{},
	}
	ca := newCA(tb, "Tenpay.com Root CA (test)")
	w.CertFile, w.KeyFile = ca.writeClientCert(tb, tb.TempDir(), w.MchID)
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(w.serve))
	w.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.serverCert(tb)},
		ClientAuth:   tls.VerifyClientCertIfGiven, ClientCAs: ca.pool,
	}
	w.srv.StartTLS()
	tb.Cleanup(w.srv.Close)
	w.URL = w.srv.URL
	// The client trusts the fake's CA (not the httptest default).
	w.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs = ca.pool
	return w
}

// Client is an HTTP client that trusts the fake's server certificate; the
// provider under test calls through it.
func (w *Wechat) Client() *http.Client { return w.srv.Client() }

// Config is the mobile_a channel configuration for this fake.
func (w *Wechat) Config(notifyURL string) map[string]any {
	return map[string]any{
		"app_id": w.AppID, "mch_id": w.MchID, "api_key": w.APIKey, "notify_url": notifyURL,
		"gateway": w.URL, "cert_file": w.CertFile, "key_file": w.KeyFile,
	}
}

// ConfigJSON is Config as the stored JSON, with sign_type when not empty.
func (w *Wechat) ConfigJSON(notifyURL, signType string) []byte {
	c := w.Config(notifyURL)
	if signType != "" {
		c["sign_type"] = signType
	}
	b, _ := json.Marshal(c)
	return b
}

// AddTrade puts a trade at the fake as a unified order would (NOTPAY).
func (w *Wechat) AddTrade(orderNo string, fee int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trades[orderNo] = &WechatTrade{OrderNo: orderNo, TotalFee: fee, State: "NOTPAY"}
}

// SetState sets a held trade's trade_state (a paid state gets a
// transaction_id). It reports whether the trade exists.
func (w *Wechat) SetState(orderNo, state string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.trades[orderNo]
	if ok {
		t.State = state
		if (state == "SUCCESS" || state == "REFUND") && t.TransactionID == "" {
			w.seq++
			t.TransactionID = fmt.Sprintf("42000000002026112700%08d", w.seq)
		}
	}
	return ok
}

// Pay marks the trade paid and answers the payment notification WeChat
// would POST to notify_url (XML, signed MD5 with the API key).
func (w *Wechat) Pay(tb testing.TB, orderNo string) string {
	tb.Helper()
	if !w.SetState(orderNo, "SUCCESS") {
		tb.Fatalf("wechat fake: no trade %s", orderNo)
	}
	return w.Notification(orderNo)
}

// Notification is the signed payment notification of a paid trade.
func (w *Wechat) Notification(orderNo string) string {
	t, _ := w.Trade(orderNo)
	f := map[string]string{
		"appid": w.AppID, "mch_id": w.MchID, "nonce_str": "5d2b6c2a8db53831f7eda20af46e531c",
		"return_code": "SUCCESS", "result_code": "SUCCESS", "openid": "oUpF8uMEb4qRXf22hE3X68TekukE",
		"is_subscribe": "N", "trade_type": "NATIVE", "bank_type": "CMC", "fee_type": "CNY",
		"total_fee": strconv.FormatInt(t.TotalFee, 10), "cash_fee": strconv.FormatInt(t.TotalFee, 10),
		"transaction_id": t.TransactionID, "out_trade_no": orderNo, "time_end": "20261127120000",
	}
	f["sign"] = WechatSign(f, "", w.APIKey)
	return string(WechatXML(f))
}

// Trade answers the held trade of orderNo.
func (w *Wechat) Trade(orderNo string) (WechatTrade, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.trades[orderNo]
	if !ok {
		return WechatTrade{}, false
	}
	return *t, true
}

// Refunds answers the refunds accepted for orderNo, in no order.
func (w *Wechat) Refunds(orderNo string) []WechatRefund {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []WechatRefund
	for _, r := range w.refunds {
		if r.OrderNo == orderNo {
			out = append(out, r)
		}
	}
	return out
}

// Calls counts the requests to path (verified or not).
func (w *Wechat) Calls(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[path]
}

// LastRequest is the last verified request to path.
func (w *Wechat) LastRequest(path string) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests[path]
}

func (w *Wechat) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.calls[r.URL.Path]++
	w.mu.Unlock()
	handlers := map[string]func(map[string]string) map[string]string{
		"/pay/unifiedorder": w.unifiedOrder, "/pay/orderquery": w.orderQuery,
		"/pay/closeorder": w.closeOrder, "/secapi/pay/refund": w.refund,
	}
	h, ok := handlers[r.URL.Path]
	if r.Method != http.MethodPost || !ok {
		http.NotFound(rw, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/secapi/") && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		writeXML(rw, map[string]string{"return_code": "FAIL", "return_msg": "证书错误"})
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req, err := parseWechatXML(body)
	if err != nil {
		writeXML(rw, map[string]string{"return_code": "FAIL", "return_msg": "XML格式错误"})
		return
	}
	signType := req["sign_type"]
	if (signType != "" && signType != "MD5" && signType != "HMAC-SHA256") || req["nonce_str"] == "" ||
		req["sign"] != WechatSign(req, signType, w.APIKey) {
		writeXML(rw, map[string]string{"return_code": "FAIL", "return_msg": "签名错误"})
		return
	}
	var answer map[string]string
	if req["appid"] != w.AppID || req["mch_id"] != w.MchID {
		answer = fail("APPID_MCHID_NOT_MATCH", "appid和mch_id不匹配")
	} else {
		w.mu.Lock()
		w.requests[r.URL.Path] = req
		w.mu.Unlock()
		if w.Answer != nil {
			answer = w.Answer(r.URL.Path, req)
		}
		if answer == nil {
			w.mu.Lock()
			answer = h(req)
			w.mu.Unlock()
		}
	}
	if answer["return_code"] == "" {
		answer["return_code"], answer["return_msg"] = "SUCCESS", "OK"
	}
	for k, v := range map[string]string{"appid": w.AppID, "mch_id": w.MchID, "nonce_str": "7e1c6b5a2f9d4e3c8b0a"} {
		if _, set := answer[k]; !set {
			answer[k] = v
		}
	}
	if answer["sign"] == "" {
		answer["sign"] = WechatSign(answer, signType, w.APIKey)
	}
	if w.Tamper != nil {
		w.Tamper(r.URL.Path, answer)
	}
	writeXML(rw, answer)
}

func fail(code, des string) map[string]string {
	return map[string]string{"result_code": "FAIL", "err_code": code, "err_code_des": des}
}

// parseFen reads a WeChat fen field as WeChat does: a positive integer.
func parseFen(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == s
}

func (w *Wechat) unifiedOrder(req map[string]string) map[string]string {
	for _, k := range []string{"body", "out_trade_no", "total_fee", "spbill_create_ip", "notify_url", "trade_type"} {
		if req[k] == "" {
			return fail("PARAM_ERROR", "缺少参数"+k)
		}
	}
	fee, ok := parseFen(req["total_fee"])
	if !ok {
		return fail("PARAM_ERROR", "total_fee格式错误")
	}
	no := req["out_trade_no"]
	if t, held := w.trades[no]; held {
		switch {
		case t.State == "SUCCESS" || t.State == "REFUND":
			return fail("ORDERPAID", "该订单已支付")
		case t.State == "CLOSED":
			return fail("ORDERCLOSED", "该订单已关闭")
		case t.TotalFee != fee:
			return fail("INVALID_REQUEST", "201 商户订单号重复")
		}
	} else {
		w.trades[no] = &WechatTrade{OrderNo: no, TotalFee: fee, State: "NOTPAY"}
	}
	return map[string]string{"result_code": "SUCCESS", "trade_type": req["trade_type"],
		"prepay_id": "wx27120000" + no, "code_url": "weixin://wxpay/bizpayurl?pr=" + no}
}

var wechatStateDesc = map[string]string{
	"SUCCESS": "支付成功", "REFUND": "转入退款", "NOTPAY": "订单未支付", "CLOSED": "已关闭",
	"REVOKED": "已撤销", "USERPAYING": "用户支付中", "PAYERROR": "支付失败",
}

func (w *Wechat) orderQuery(req map[string]string) map[string]string {
	t, ok := w.trades[req["out_trade_no"]]
	if !ok {
		return fail("ORDERNOTEXIST", "此交易订单号不存在")
	}
	a := map[string]string{"result_code": "SUCCESS", "out_trade_no": t.OrderNo, "trade_state": t.State,
		"trade_state_desc": wechatStateDesc[t.State], "total_fee": strconv.FormatInt(t.TotalFee, 10)}
	if t.TransactionID != "" {
		a["transaction_id"], a["fee_type"], a["trade_type"], a["time_end"] = t.TransactionID, "CNY", "NATIVE", "20261127120000"
	}
	return a
}

func (w *Wechat) closeOrder(req map[string]string) map[string]string {
	t, ok := w.trades[req["out_trade_no"]]
	switch {
	case !ok:
		return fail("ORDERNOTEXIST", "订单不存在")
	case t.State == "SUCCESS" || t.State == "REFUND":
		return fail("ORDERPAID", "订单已支付，不能发起关单")
	case t.State == "CLOSED":
		return fail("ORDERCLOSED", "订单已关闭，无法重复关闭")
	}
	t.State = "CLOSED"
	return map[string]string{"result_code": "SUCCESS"}
}

func (w *Wechat) refund(req map[string]string) map[string]string {
	t, ok := w.trades[req["out_trade_no"]]
	if !ok || (req["transaction_id"] != "" && req["transaction_id"] != t.TransactionID) {
		return fail("ORDERNOTEXIST", "订单不存在")
	}
	total, ok1 := parseFen(req["total_fee"])
	fee, ok2 := parseFen(req["refund_fee"])
	if !ok1 || !ok2 || req["out_refund_no"] == "" || total != t.TotalFee {
		return fail("PARAM_ERROR", "订单金额或退款金额与之前请求不一致，请核实后再试")
	}
	answer := func(r WechatRefund) map[string]string {
		return map[string]string{"result_code": "SUCCESS", "transaction_id": t.TransactionID,
			"out_trade_no": t.OrderNo, "out_refund_no": r.RefundNo, "refund_id": r.RefundID,
			"refund_fee": strconv.FormatInt(r.RefundFee, 10), "total_fee": strconv.FormatInt(r.TotalFee, 10),
			"cash_fee": strconv.FormatInt(r.TotalFee, 10)}
	}
	if prev, done := w.refunds[req["out_refund_no"]]; done {
		if prev.OrderNo != t.OrderNo || prev.RefundFee != fee {
			return fail("PARAM_ERROR", "订单金额或退款金额与之前请求不一致，请核实后再试")
		}
		return answer(prev) // WeChat deduplicates on out_refund_no
	}
	if t.State != "SUCCESS" && t.State != "REFUND" {
		return fail("ERROR", "订单未支付")
	}
	if t.RefundedFee+fee > t.TotalFee {
		return fail("ERROR", "累计退款金额大于支付金额")
	}
	w.seq++
	r := WechatRefund{OrderNo: t.OrderNo, RefundNo: req["out_refund_no"], RefundID: fmt.Sprintf("50300000002026112700%08d", w.seq),
		TotalFee: total, RefundFee: fee}
	w.refunds[r.RefundNo] = r
	t.RefundedFee += fee
	t.State = "REFUND"
	return answer(r)
}

// WechatSign is API v2's sign of fields: the non-empty fields except
// sign, sorted, "k=v&…&key=API_KEY", MD5 (signType "" or MD5) or
// HMAC-SHA256 keyed with the API key, upper-case hex.
func WechatSign(fields map[string]string, signType, apiKey string) string {
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
	b.WriteString("key=" + apiKey)
	var h hash.Hash = md5.New()
	if signType == "HMAC-SHA256" {
		h = hmac.New(sha256.New, []byte(apiKey))
	}
	h.Write([]byte(b.String()))
	return strings.ToUpper(hex.EncodeToString(h.Sum(nil)))
}

// WechatXML writes fields as a v2 message, values in CDATA as WeChat
// writes them (a value holding "]]>" is escaped instead).
func WechatXML(fields map[string]string) []byte {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("<xml>")
	for _, k := range keys {
		v := fields[k]
		if strings.Contains(v, "]]>") {
			b.WriteString("<" + k + ">")
			xml.EscapeText(&b, []byte(v))
			b.WriteString("</" + k + ">")
		} else {
			b.WriteString("<" + k + "><![CDATA[" + v + "]]></" + k + ">")
		}
	}
	b.WriteString("</xml>")
	return b.Bytes()
}

func writeXML(rw http.ResponseWriter, fields map[string]string) {
	rw.Header().Set("Content-Type", "text/xml; charset=utf-8")
	rw.Write(WechatXML(fields))
}

// parseWechatXML reads a flat <xml> message.
func parseWechatXML(body []byte) (map[string]string, error) {
	var doc struct {
		XMLName xml.Name
		Fields  []struct {
			XMLName xml.Name
			Value   string `xml:",chardata"`
		} `xml:",any"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if doc.XMLName.Local != "xml" {
		return nil, fmt.Errorf("root %q", doc.XMLName.Local)
	}
	f := map[string]string{}
	for _, x := range doc.Fields {
		f[x.XMLName.Local] = x.Value
	}
	return f, nil
}
