package wechat

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/modelgate/modelgate/internal/payment"
)

// Refund asks WeChat Pay to refund (part of) a paid order. Nothing calls
// it yet: the spec's refund (PUT /api/order/:id status=3) is a status flip
// only; this is the provider call an operator-facing refund would make.
type Refund struct {
	OrderNo     string // out_trade_no of the paid order
	RefundNo    string // out_refund_no: unique per refund; a retry with the same one is not refunded twice
	TotalCents  int64  // the order's amount, fen
	RefundCents int64  // the amount to refund, fen, 1..TotalCents
	Reason      string // refund_desc, optional, shown to the payer
}

// Refunded is WeChat's acceptance of a refund (it completes
// asynchronously; WeChat's refund notification is not handled).
type Refunded struct {
	RefundID    string
	RefundCents int64
}

var refundNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-|*@]{1,64}$`)

// Refund calls /secapi/pay/refund with the merchant API certificate
// (cert_file, key_file: mutual TLS, as WeChat requires for refunds).
func (p *Provider) Refund(ctx context.Context, raw []byte, r Refund) (Refunded, error) {
	c, err := parseConfig(raw)
	if err != nil {
		return Refunded{}, err
	}
	gw, err := c.gateway()
	if err != nil {
		return Refunded{}, err
	}
	if !orderNoPattern.MatchString(r.OrderNo) || !refundNoPattern.MatchString(r.RefundNo) {
		return Refunded{}, errors.New("wechat refund: order or refund number is not valid for WeChat")
	}
	if r.TotalCents <= 0 || r.RefundCents <= 0 || r.RefundCents > r.TotalCents {
		return Refunded{}, fmt.Errorf("wechat refund: refund %d of %d fen is not 1..total", r.RefundCents, r.TotalCents)
	}
	client, err := p.certClient(c)
	if err != nil {
		return Refunded{}, err
	}
	req := map[string]string{
		"appid":         c.AppID,
		"mch_id":        c.MchID,
		"nonce_str":     nonce(),
		"out_trade_no":  r.OrderNo,
		"out_refund_no": r.RefundNo,
		"total_fee":     strconv.FormatInt(r.TotalCents, 10),
		"refund_fee":    strconv.FormatInt(r.RefundCents, 10),
	}
	if d := bodyField(r.Reason, ""); d != "" {
		req["refund_desc"] = d
	}
	if c.SignType == SignHMACSHA256 {
		req["sign_type"] = SignHMACSHA256
	}
	if req["sign"], err = sign(req, c.SignType, c.APIKey); err != nil {
		return Refunded{}, err
	}
	resp, err := (&Provider{Client: client}).post(ctx, gw+"/secapi/pay/refund", encodeXML(req))
	if err != nil {
		return Refunded{}, fmt.Errorf("wechat refund: %w", err)
	}
	if resp["return_code"] != "SUCCESS" {
		return Refunded{}, fmt.Errorf("wechat refund: %s %s", clean(resp["return_code"]), clean(resp["return_msg"]))
	}
	if err := verify(resp, c.SignType, c.APIKey); err != nil {
		return Refunded{}, fmt.Errorf("wechat refund answer: %w", err)
	}
	if resp["appid"] != c.AppID || resp["mch_id"] != c.MchID {
		return Refunded{}, errors.New("wechat refund answer: appid or mch_id is not this merchant's")
	}
	if resp["result_code"] != "SUCCESS" {
		return Refunded{}, fmt.Errorf("wechat refund: %s %s", clean(resp["err_code"]), clean(resp["err_code_des"]))
	}
	if resp["out_refund_no"] != r.RefundNo || !feePattern.MatchString(resp["refund_fee"]) || resp["refund_id"] == "" {
		return Refunded{}, errors.New("wechat refund answer: not for this refund")
	}
	fen, _ := strconv.ParseInt(resp["refund_fee"], 10, 64)
	return Refunded{RefundID: resp["refund_id"], RefundCents: fen}, nil
}

// certClient is p's client presenting the merchant certificate. It clones
// the client's transport so its timeouts and trusted roots stay.
func (p *Provider) certClient(c config) (*http.Client, error) {
	if c.CertFile == "" || c.KeyFile == "" {
		return nil, errors.New("wechat refund: mobile_a config needs cert_file and key_file (the merchant API certificate)")
	}
	// Read the key through the shared parser first so a passphrase is
	// reported as such rather than as a TLS error.
	if _, err := payment.LoadPrivateKey("", c.KeyFile); errors.Is(err, payment.ErrKeyEncrypted) {
		return nil, fmt.Errorf("wechat refund: key_file: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("wechat refund: merchant certificate: %w", err)
	}
	base := p.Client
	if base == nil {
		base = http.DefaultClient
	}
	var tr *http.Transport
	switch t := base.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	default:
		return nil, fmt.Errorf("wechat refund: cannot add a client certificate to a %T", t)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	tr.TLSClientConfig.Certificates = []tls.Certificate{pair}
	cl := *base
	cl.Transport = tr
	return &cl, nil
}
