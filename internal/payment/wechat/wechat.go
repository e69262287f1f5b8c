// Package wechat is the mobile_a payment channel: WeChat Pay Native over
// the API v2 XML protocol (unified order, payment notification; close,
// query and refund in trade.go and refund.go), signed with the merchant's
// API key (MD5 or HMAC-SHA256). Verification is ours,
// on the standard library (docs/decisions/commerce.md, Payment providers).
package wechat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/payment"
)

// DefaultGateway is WeChat Pay's API base URL.
const DefaultGateway = "https://api.mch.weixin.qq.com"

// MaxBodyBytes bounds a notification or an API answer.
const MaxBodyBytes = payment.MaxBodyBytes

// DefaultTTL is how long a Native code_url stays payable: WeChat's own
// limit for a Native prepay is two hours, and time_expire says so
// explicitly so expire_at is what the provider enforces.
const DefaultTTL = 2 * time.Hour

// maxBodyField is WeChat's limit on the body (subject) field, in bytes.
const maxBodyField = 128

// china is the time zone of time_start/time_expire (GMT+8, no DST).
var china = time.FixedZone("CST", 8*3600)

// orderNoPattern is WeChat's out_trade_no: at most 32 of [0-9A-Za-z_-|*].
var orderNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-|*]{1,32}$`)

// feePattern is a total_fee in fen: a positive integer without sign or
// leading zero, short enough never to overflow int64.
var feePattern = regexp.MustCompile(`^[1-9][0-9]{0,15}$`)

// Provider speaks WeChat Pay API v2. The zero value works (default client,
// clock and TTL).
type Provider struct {
	Client *http.Client     // nil: http.DefaultClient
	Now    func() time.Time // nil: time.Now
	TTL    time.Duration    // 0: DefaultTTL
}

// New answers a Provider calling the API through client.
func New(client *http.Client) *Provider { return &Provider{Client: client} }

var _ payment.Provider = (*Provider)(nil)

// config is the stored channel configuration. SignType is an optional
// extra field ("MD5" default, "HMAC-SHA256") read from the same JSON; the
// shared payment.WechatConfig does not carry it.
type config struct {
	payment.WechatConfig
	SignType string `json:"sign_type,omitempty"`
}

func parseConfig(raw []byte) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("mobile_a config: %w", err)
	}
	if c.AppID == "" || c.MchID == "" || c.APIKey == "" {
		return c, errors.New("mobile_a config: app_id, mch_id and api_key are required")
	}
	switch c.SignType {
	case "", SignMD5, SignHMACSHA256:
	default:
		return c, fmt.Errorf("mobile_a config: unsupported sign_type %q", c.SignType)
	}
	return c, nil
}

func (c config) gateway() (string, error) {
	return payment.Gateway(payment.MethodWechat, c.Gateway, DefaultGateway)
}

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Prepay places a Native unified order and answers its code_url.
func (p *Provider) Prepay(ctx context.Context, raw []byte, o payment.Prepay) (payment.Pay, error) {
	c, err := parseConfig(raw)
	if err != nil {
		return payment.Pay{}, err
	}
	gw, err := c.gateway()
	if err != nil {
		return payment.Pay{}, err
	}
	if c.NotifyURL == "" {
		return payment.Pay{}, errors.New("mobile_a config: notify_url is required")
	}
	if !orderNoPattern.MatchString(o.OrderNo) {
		return payment.Pay{}, fmt.Errorf("wechat prepay: order number %q is not a WeChat out_trade_no", o.OrderNo)
	}
	if o.AmountCents <= 0 {
		return payment.Pay{}, fmt.Errorf("wechat prepay: amount %d fen is not positive", o.AmountCents)
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	start := p.now()
	expire := start.Add(ttl)
	req := map[string]string{
		"appid":            c.AppID,
		"mch_id":           c.MchID,
		"nonce_str":        nonce(),
		"body":             bodyField(o.Subject, o.OrderNo),
		"out_trade_no":     o.OrderNo,
		"total_fee":        strconv.FormatInt(o.AmountCents, 10),
		"spbill_create_ip": clientIP(o.ClientIP),
		"notify_url":       c.NotifyURL,
		"trade_type":       "NATIVE",
		"product_id":       o.OrderNo, // required for NATIVE
		"time_start":       start.In(china).Format("20060102150405"),
		"time_expire":      expire.In(china).Format("20060102150405"),
	}
	if c.SignType == SignHMACSHA256 {
		req["sign_type"] = SignHMACSHA256
	}
	if req["sign"], err = sign(req, c.SignType, c.APIKey); err != nil {
		return payment.Pay{}, err
	}
	resp, err := p.post(ctx, gw+"/pay/unifiedorder", encodeXML(req))
	if err != nil {
		return payment.Pay{}, fmt.Errorf("wechat prepay: %w", err)
	}
	if resp["return_code"] != "SUCCESS" {
		return payment.Pay{}, fmt.Errorf("wechat prepay: %s %s", clean(resp["return_code"]), clean(resp["return_msg"]))
	}
	// The answer is signed with the request's sign type.
	if err := verify(resp, c.SignType, c.APIKey); err != nil {
		return payment.Pay{}, fmt.Errorf("wechat prepay answer: %w", err)
	}
	if resp["appid"] != c.AppID || resp["mch_id"] != c.MchID {
		return payment.Pay{}, errors.New("wechat prepay answer: appid or mch_id is not this merchant's")
	}
	if resp["result_code"] != "SUCCESS" {
		return payment.Pay{}, fmt.Errorf("wechat prepay: %s %s", clean(resp["err_code"]), clean(resp["err_code_des"]))
	}
	if resp["code_url"] == "" || resp["prepay_id"] == "" {
		return payment.Pay{}, errors.New("wechat prepay answer: code_url or prepay_id missing")
	}
	return payment.Pay{
		Status:   payment.PayReady,
		PayURL:   resp["code_url"],
		QRCode:   resp["code_url"],
		ExpireAt: expire.Unix(),
		TradeNo:  resp["prepay_id"],
	}, nil
}

// post sends an XML request and decodes the XML answer.
func (p *Provider) post(ctx context.Context, endpoint string, body []byte) (map[string]string, error) {
	b, err := payment.Post(ctx, p.Client, endpoint, "text/xml; charset=utf-8", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return decodeXML(b)
}

// Notify verifies a payment notification (API v2 XML).
func (p *Provider) Notify(r *http.Request, raw []byte) (payment.Paid, error) {
	c, err := parseConfig(raw)
	if err != nil {
		return payment.Paid{}, err
	}
	body, err := payment.ReadBounded(r.Body)
	if err != nil {
		return payment.Paid{}, fmt.Errorf("wechat notify: %w", err)
	}
	f, err := decodeXML(body)
	if err != nil {
		return payment.Paid{}, fmt.Errorf("wechat notify: %w", err)
	}
	if f["return_code"] != "SUCCESS" {
		return payment.Paid{}, fmt.Errorf("wechat notify: return_code %q", clean(f["return_code"]))
	}
	// The notification names its own sign type; either one needs the API
	// key, so accepting both lets no one without it through.
	if err := verify(f, f["sign_type"], c.APIKey); err != nil {
		return payment.Paid{}, fmt.Errorf("wechat notify: %w", err)
	}
	if f["appid"] != c.AppID || f["mch_id"] != c.MchID {
		return payment.Paid{}, fmt.Errorf("wechat notify: appid %q mch_id %q are not this merchant's", clean(f["appid"]), clean(f["mch_id"]))
	}
	if f["result_code"] != "SUCCESS" {
		return payment.Paid{}, fmt.Errorf("wechat notify: result_code %q", clean(f["result_code"]))
	}
	if ft := f["fee_type"]; ft != "" && ft != "CNY" {
		return payment.Paid{}, fmt.Errorf("wechat notify: fee_type %q", clean(ft))
	}
	if !feePattern.MatchString(f["total_fee"]) {
		return payment.Paid{}, fmt.Errorf("wechat notify: total_fee %q is not a positive amount in fen", clean(f["total_fee"]))
	}
	fen, err := strconv.ParseInt(f["total_fee"], 10, 64)
	if err != nil {
		return payment.Paid{}, fmt.Errorf("wechat notify: total_fee: %w", err)
	}
	if f["out_trade_no"] == "" || f["transaction_id"] == "" {
		return payment.Paid{}, errors.New("wechat notify: out_trade_no or transaction_id missing")
	}
	return payment.Paid{
		Method:      payment.MethodWechat,
		OrderNo:     f["out_trade_no"],
		AmountCents: fen,
		TradeNo:     f["transaction_id"],
	}, nil
}

// Reply answers WeChat in its XML: SUCCESS stops its retries.
func (p *Provider) Reply(w http.ResponseWriter, ok bool) {
	code, msg := "FAIL", "FAIL"
	if ok {
		code, msg = "SUCCESS", "OK"
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "<xml><return_code><![CDATA[%s]]></return_code><return_msg><![CDATA[%s]]></return_msg></xml>", code, msg)
}

// nonce is 32 random hex characters (nonce_str allows 32).
func nonce() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

// bodyField is the subject cut to WeChat's 128 bytes on a rune boundary,
// without NUL or invalid UTF-8; the order number when nothing is left.
func bodyField(subject, orderNo string) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(subject, ""), "\x00", "")
	for len(s) > maxBodyField {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	if strings.TrimSpace(s) == "" {
		return orderNo
	}
	return s
}

// clientIP is the payer's IP as spbill_create_ip, which the API requires;
// 127.0.0.1 when it is not known (Native payers pay on their phones, so
// WeChat does not use it for risk checks here).
func clientIP(ip string) string {
	if a := net.ParseIP(ip); a != nil {
		return a.String()
	}
	return "127.0.0.1"
}

// clean keeps provider text safe for logs and warnings: valid UTF-8, no
// control characters, at most 200 bytes.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}
