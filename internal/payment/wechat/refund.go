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

var refundNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-|*@]{1,64}$`)

// Refund calls /secapi/pay/refund with the merchant API certificate
// (cert_file, key_file: mutual TLS, as WeChat requires for refunds).
// WeChat deduplicates on out_refund_no: a repeat with the same RefundNo
// and amounts answers the first refund again. The refund completes
// asynchronously (WeChat's refund notification is not handled), so the
// answer is never Settled.
func (p *Provider) Refund(ctx context.Context, raw []byte, r payment.RefundRequest) (payment.Refunded, error) {
	c, err := parseConfig(raw)
	if err != nil {
		return payment.Refunded{}, err
	}
	if _, err := c.gateway(); err != nil {
		return payment.Refunded{}, err
	}
	if !orderNoPattern.MatchString(r.OrderNo) || !refundNoPattern.MatchString(r.RefundNo) {
		return payment.Refunded{}, errors.New("wechat refund: order or refund number is not valid for WeChat")
	}
	if r.TradeNo != "" && !tradeNoPattern.MatchString(r.TradeNo) {
		return payment.Refunded{}, errors.New("wechat refund: transaction_id is not valid for WeChat")
	}
	if err := payment.ValidateRefund(r); err != nil {
		return payment.Refunded{}, fmt.Errorf("wechat refund: %w", err)
	}
	client, err := p.certClient(c)
	if err != nil {
		return payment.Refunded{}, err
	}
	req := map[string]string{
		"out_trade_no":  r.OrderNo,
		"out_refund_no": r.RefundNo,
		"total_fee":     strconv.FormatInt(r.TotalCents, 10),
		"refund_fee":    strconv.FormatInt(r.AmountCents, 10),
	}
	if r.TradeNo != "" {
		req["transaction_id"] = r.TradeNo // WeChat prefers it over out_trade_no
	}
	if d := bodyField(r.Reason, ""); d != "" {
		req["refund_desc"] = d
	}
	resp, err := p.call(ctx, client, c, "refund", "/secapi/pay/refund", req)
	if err != nil {
		return payment.Refunded{}, err
	}
	if resp["result_code"] != "SUCCESS" {
		return payment.Refunded{}, businessError("refund", resp)
	}
	if resp["out_refund_no"] != r.RefundNo || resp["out_trade_no"] != r.OrderNo || resp["refund_id"] == "" ||
		resp["refund_fee"] != strconv.FormatInt(r.AmountCents, 10) {
		return payment.Refunded{}, errors.New("wechat refund answer: not for this refund")
	}
	return payment.Refunded{RefundNo: r.RefundNo, RefundID: clean(resp["refund_id"]), AmountCents: r.AmountCents}, nil
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
