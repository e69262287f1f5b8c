// Package alipay is the mobile_b payment channel: Alipay face-to-face
// precreate (alipay.trade.precreate, a QR code the payer scans) and its
// asynchronous payment notification, and the trade calls after it
// (alipay.trade.close, .query, .refund in trade.go), all signed RSA2
// (RSA-SHA256) with the app's private key and Alipay's public key. Verification is ours, on
// the standard library (docs/decisions/commerce.md, Payment providers).
package alipay

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/payment"
)

// DefaultGateway is Alipay's production OpenAPI gateway.
const DefaultGateway = "https://openapi.alipay.com/gateway.do"

// MaxBodyBytes bounds a notification or an API answer.
const MaxBodyBytes = payment.MaxBodyBytes

// DefaultTTL is how long a precreate QR code is payable; the request's
// timeout_express says so, so expire_at is what Alipay enforces (its own
// default for an unscanned precreate code is also two hours).
const DefaultTTL = 2 * time.Hour

// maxFen is Alipay's largest single payment, 100,000,000.00 yuan.
const maxFen = 100_000_000_00

// maxSubject is Alipay's limit on subject, in characters.
const maxSubject = 256

const responseKey = "alipay_trade_precreate_response"

// china is the zone of the timestamp parameter (GMT+8, no DST).
var china = time.FixedZone("CST", 8*3600)

// orderNoPattern is Alipay's out_trade_no: at most 64 letters, digits,
// underscores (hyphens are tolerated by the API too).
var orderNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-]{1,64}$`)

// Provider speaks Alipay OpenAPI with RSA2 in public-key mode. The zero
// value works (default client, clock and TTL).
type Provider struct {
	Client *http.Client     // nil: http.DefaultClient
	Now    func() time.Time // nil: time.Now
	TTL    time.Duration    // 0: DefaultTTL
}

// New answers a Provider calling the gateway through client.
func New(client *http.Client) *Provider { return &Provider{Client: client} }

var _ payment.Provider = (*Provider)(nil)

// config is a parsed AlipayConfig with its keys loaded.
type config struct {
	payment.AlipayConfig
	private *rsa.PrivateKey // nil unless asked for
	public  *rsa.PublicKey
}

// parseConfig reads the channel config; the app private key is loaded
// only when signing (a notification needs just Alipay's public key).
func parseConfig(raw []byte, needPrivate bool) (config, error) {
	var c config
	if err := json.Unmarshal(raw, &c.AlipayConfig); err != nil {
		return c, fmt.Errorf("mobile_b config: %w", err)
	}
	if c.AppID == "" {
		return c, errors.New("mobile_b config: app_id is required")
	}
	var err error
	if c.public, err = payment.LoadPublicKey(c.PublicKey, c.PublicKeyFile); err != nil {
		return c, fmt.Errorf("mobile_b config: alipay public key: %w", err)
	}
	if needPrivate {
		if c.private, err = payment.LoadPrivateKey(c.PrivateKey, c.PrivateKeyFile); err != nil {
			return c, fmt.Errorf("mobile_b config: app private key: %w", err)
		}
	}
	return c, nil
}

func (c config) gateway() (string, error) {
	return payment.Gateway(payment.MethodAlipay, c.Gateway, DefaultGateway)
}

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// bizContent is the precreate request's business JSON.
type bizContent struct {
	OutTradeNo     string `json:"out_trade_no"`
	TotalAmount    string `json:"total_amount"`
	Subject        string `json:"subject"`
	TimeoutExpress string `json:"timeout_express"`
}

// precreateAnswer is alipay_trade_precreate_response.
type precreateAnswer struct {
	Code       string `json:"code"`
	Msg        string `json:"msg"`
	SubCode    string `json:"sub_code"`
	SubMsg     string `json:"sub_msg"`
	OutTradeNo string `json:"out_trade_no"`
	QRCode     string `json:"qr_code"`
}

// Prepay calls alipay.trade.precreate and answers its qr_code.
func (p *Provider) Prepay(ctx context.Context, raw []byte, o payment.Prepay) (payment.Pay, error) {
	c, err := parseConfig(raw, true)
	if err != nil {
		return payment.Pay{}, err
	}
	gw, err := c.gateway()
	if err != nil {
		return payment.Pay{}, err
	}
	if c.NotifyURL == "" {
		return payment.Pay{}, errors.New("mobile_b config: notify_url is required")
	}
	if !orderNoPattern.MatchString(o.OrderNo) {
		return payment.Pay{}, fmt.Errorf("alipay prepay: order number %q is not an Alipay out_trade_no", o.OrderNo)
	}
	if o.AmountCents <= 0 || o.AmountCents > maxFen {
		return payment.Pay{}, fmt.Errorf("alipay prepay: amount %d fen is outside 1..%d", o.AmountCents, maxFen)
	}
	ttl := p.TTL
	if ttl < time.Minute {
		ttl = DefaultTTL
	}
	ttl = ttl.Truncate(time.Minute)
	now := p.now()
	biz, err := json.Marshal(bizContent{
		OutTradeNo:     o.OrderNo,
		TotalAmount:    FormatYuan(o.AmountCents),
		Subject:        subject(o.Subject, o.OrderNo),
		TimeoutExpress: fmt.Sprintf("%dm", int64(ttl/time.Minute)),
	})
	if err != nil {
		return payment.Pay{}, err
	}
	form := url.Values{
		"app_id":      {c.AppID},
		"method":      {"alipay.trade.precreate"},
		"format":      {"JSON"},
		"charset":     {"utf-8"},
		"sign_type":   {"RSA2"},
		"timestamp":   {now.In(china).Format("2006-01-02 15:04:05")},
		"version":     {"1.0"},
		"notify_url":  {c.NotifyURL},
		"biz_content": {string(biz)},
	}
	s, err := signRSA2(c.private, []byte(signContent(form, true, "sign")))
	if err != nil {
		return payment.Pay{}, fmt.Errorf("alipay prepay: sign: %w", err)
	}
	form.Set("sign", s)
	body, err := p.post(ctx, gw, form)
	if err != nil {
		return payment.Pay{}, fmt.Errorf("alipay prepay: %w", err)
	}
	a, err := readAnswer(body, c.public)
	if err != nil {
		return payment.Pay{}, fmt.Errorf("alipay prepay: %w", err)
	}
	if a.OutTradeNo != o.OrderNo || a.QRCode == "" {
		return payment.Pay{}, errors.New("alipay prepay: answer is not for this order or has no qr_code")
	}
	return payment.Pay{
		Status:   payment.PayReady,
		PayURL:   a.QRCode,
		QRCode:   a.QRCode,
		ExpireAt: now.Add(ttl).Unix(),
		TradeNo:  qrToken(a.QRCode),
	}, nil
}

func (p *Provider) post(ctx context.Context, gateway string, form url.Values) ([]byte, error) {
	return payment.Post(ctx, p.Client, gateway, "application/x-www-form-urlencoded;charset=utf-8", strings.NewReader(form.Encode()))
}

// readAnswer verifies a precreate answer (openAnswer) and decodes it. An
// error answer (code other than 10000) is reported with its codes even
// when unsigned: it is only ever a failure.
func readAnswer(body []byte, pub *rsa.PublicKey) (precreateAnswer, error) {
	var a precreateAnswer
	node, st, _, err := openAnswer(body, responseKey, pub)
	if err != nil {
		return a, err
	}
	if st.Code != "10000" {
		return a, fmt.Errorf("%s %s %s %s", clean(st.Code), clean(st.Msg), clean(st.SubCode), clean(st.SubMsg))
	}
	if err := json.Unmarshal(node, &a); err != nil {
		return a, fmt.Errorf("answer: %w", err)
	}
	return a, nil
}

// answerStatus is the common part of every OpenAPI response object.
type answerStatus struct {
	Code    string `json:"code"`
	Msg     string `json:"msg"`
	SubCode string `json:"sub_code"`
	SubMsg  string `json:"sub_msg"`
}

// openAnswer finds the response object key (or error_response) of an
// OpenAPI answer and checks its signature: Alipay signs the raw JSON text
// of the response object as it appears in the body, so the signature is
// checked over those exact bytes before they are decoded. A present
// signature must verify; signed says one did. A success (code 10000)
// must be signed; an unsigned error answer is returned for the caller to
// report, never to act on.
func openAnswer(body []byte, key string, pub *rsa.PublicKey) (node json.RawMessage, st answerStatus, signed bool, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, st, false, fmt.Errorf("answer is not JSON: %w", err)
	}
	node, ok := top[key]
	if !ok {
		node, ok = top["error_response"]
	}
	if !ok {
		return nil, st, false, errors.New("answer has no response object")
	}
	if err := json.Unmarshal(node, &st); err != nil {
		return nil, st, false, fmt.Errorf("answer: %w", err)
	}
	var sig string
	if s, ok := top["sign"]; ok {
		if err := json.Unmarshal(s, &sig); err != nil {
			return nil, st, false, errors.New("answer sign is not a string")
		}
	}
	if sig == "" {
		if st.Code == "10000" {
			return nil, st, false, errors.New("answer: not signed")
		}
		return node, st, false, nil
	}
	if err := verifyRSA2(pub, node, sig); err != nil {
		return nil, st, false, fmt.Errorf("answer: %w", err)
	}
	return node, st, true, nil
}

// Reply answers Alipay in plain text: "success" stops its retries.
func (p *Provider) Reply(w http.ResponseWriter, ok bool) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if ok {
		io.WriteString(w, "success")
	} else {
		io.WriteString(w, "fail")
	}
}

// FormatYuan writes fen as Alipay's total_amount, yuan with two decimals.
func FormatYuan(fen int64) string {
	return fmt.Sprintf("%d.%02d", fen/100, fen%100)
}

// qrToken is the pre-payment code that ends a precreate qr_code
// (https://qr.alipay.com/bax…): Alipay creates its trade_no only when the
// code is scanned, so this code is the channel's pre-payment id.
func qrToken(qr string) string {
	u, err := url.Parse(qr)
	if err != nil {
		return ""
	}
	t := path.Base(u.Path)
	if t == "." || t == "/" {
		return ""
	}
	return t
}

// subject is the order subject cut to Alipay's 256 characters, without
// NUL or invalid UTF-8; the order number when nothing is left.
func subject(s, orderNo string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
	if utf8.RuneCountInString(s) > maxSubject {
		s = string([]rune(s)[:maxSubject])
	}
	if strings.TrimSpace(s) == "" {
		return orderNo
	}
	return s
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
