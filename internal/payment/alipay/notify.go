package alipay

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/payment"
)

// maxParams bounds a notification's parameters: a genuine one has about
// 30.
const maxParams = 200

// amountPattern is a plain decimal yuan amount with at most two places
// and no sign, exponent, leading zero or spaces; 13 integer digits keep
// fen far inside int64.
var amountPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,12})(\.[0-9]{1,2})?$`)

// ParseYuan reads an Alipay amount ("12.34", "12.3", "12") exactly into
// fen, refusing anything else.
func ParseYuan(s string) (int64, error) {
	m := amountPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("amount %q is not a plain decimal with at most two places", clean(s))
	}
	yuan, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	frac := strings.TrimPrefix(m[2], ".")
	for len(frac) < 2 {
		frac += "0"
	}
	cents, _ := strconv.ParseInt(frac, 10, 64)
	return yuan*100 + cents, nil
}

// Notify verifies Alipay's asynchronous payment notification (a
// form-encoded POST).
func (p *Provider) Notify(r *http.Request, raw []byte) (payment.Paid, error) {
	c, err := parseConfig(raw, false)
	if err != nil {
		return payment.Paid{}, err
	}
	body, err := payment.ReadBounded(r.Body)
	if err != nil {
		return payment.Paid{}, fmt.Errorf("alipay notify: %w", err)
	}
	v, err := parseForm(body)
	if err != nil {
		return payment.Paid{}, fmt.Errorf("alipay notify: %w", err)
	}
	if st := v.Get("sign_type"); st != "RSA2" {
		return payment.Paid{}, fmt.Errorf("alipay notify: sign_type %q, want RSA2", clean(st))
	}
	if err := verifyRSA2(c.public, []byte(signContent(v, false, "sign", "sign_type")), v.Get("sign")); err != nil {
		return payment.Paid{}, fmt.Errorf("alipay notify: %w", err)
	}
	if v.Get("app_id") != c.AppID {
		return payment.Paid{}, fmt.Errorf("alipay notify: app_id %q is not this app's", clean(v.Get("app_id")))
	}
	switch st := v.Get("trade_status"); st {
	case "TRADE_SUCCESS", "TRADE_FINISHED":
	default:
		return payment.Paid{}, fmt.Errorf("alipay notify: trade_status %q", clean(st))
	}
	fen, err := ParseYuan(v.Get("total_amount"))
	if err != nil {
		return payment.Paid{}, fmt.Errorf("alipay notify: total_amount: %w", err)
	}
	if fen <= 0 {
		return payment.Paid{}, errors.New("alipay notify: total_amount is not positive")
	}
	if v.Get("out_trade_no") == "" || v.Get("trade_no") == "" {
		return payment.Paid{}, errors.New("alipay notify: out_trade_no or trade_no missing")
	}
	return payment.Paid{
		Method:      payment.MethodAlipay,
		OrderNo:     v.Get("out_trade_no"),
		AmountCents: fen,
		TradeNo:     v.Get("trade_no"),
	}, nil
}

// parseForm decodes the notification body. A repeated parameter is
// refused (which value was signed would be ambiguous), and so are values
// that are not valid UTF-8 or hold NUL bytes: we asked for charset utf-8.
func parseForm(body []byte) (url.Values, error) {
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("malformed form: %w", err)
	}
	if len(v) == 0 {
		return nil, errors.New("empty notification")
	}
	if len(v) > maxParams {
		return nil, errors.New("too many parameters")
	}
	for k, vs := range v {
		if len(vs) != 1 {
			return nil, fmt.Errorf("parameter %q repeated", clean(k))
		}
		for _, s := range []string{k, vs[0]} {
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				return nil, fmt.Errorf("parameter %q is not valid UTF-8 text", clean(k))
			}
		}
	}
	return v, nil
}
