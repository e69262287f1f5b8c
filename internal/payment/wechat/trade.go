package wechat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/modelgate/modelgate/internal/payment"
)

var _ payment.Trades = (*Provider)(nil)

// tradeNoPattern is a WeChat transaction_id (28 digits today; letters are
// tolerated so a format change does not stop refunds).
var tradeNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-]{1,32}$`)

// temporary are the err_codes after which WeChat asks for a retry.
var temporary = map[string]bool{
	"SYSTEMERROR": true, "FREQUENCY_LIMITED": true, "INVALID_REQ_TOO_MUCH": true, "BIZERR_NEED_RETRY": true,
}

// call signs req with the merchant's API key and posts it to path through
// client, then verifies the answer as every v2 answer is verified:
// return_code SUCCESS (a FAIL answer is unsigned and only ever a failure),
// the signature with the request's sign type, this merchant's appid and
// mch_id. result_code is the caller's.
func (p *Provider) call(ctx context.Context, client *http.Client, c config, op, path string, req map[string]string) (map[string]string, error) {
	gw, err := c.gateway()
	if err != nil {
		return nil, err
	}
	req["appid"], req["mch_id"], req["nonce_str"] = c.AppID, c.MchID, nonce()
	if c.SignType == SignHMACSHA256 {
		req["sign_type"] = SignHMACSHA256
	}
	if req["sign"], err = sign(req, c.SignType, c.APIKey); err != nil {
		return nil, err
	}
	resp, err := (&Provider{Client: client}).post(ctx, gw+path, encodeXML(req))
	if err != nil {
		return nil, fmt.Errorf("wechat %s: %w", op, err)
	}
	if resp["return_code"] != "SUCCESS" {
		return nil, fmt.Errorf("wechat %s: %s %s", op, clean(resp["return_code"]), clean(resp["return_msg"]))
	}
	if err := verify(resp, c.SignType, c.APIKey); err != nil {
		return nil, fmt.Errorf("wechat %s answer: %w", op, err)
	}
	if resp["appid"] != c.AppID || resp["mch_id"] != c.MchID {
		return nil, fmt.Errorf("wechat %s answer: appid or mch_id is not this merchant's", op)
	}
	return resp, nil
}

// businessError is the payment.ProviderError of a result_code FAIL answer.
func businessError(op string, resp map[string]string) error {
	code := clean(resp["err_code"])
	return &payment.ProviderError{
		Method: payment.MethodWechat, Op: op, Code: code,
		Message: clean(resp["err_code_des"]), Temporary: temporary[code],
	}
}

// Close calls /pay/closeorder. WeChat answers ORDERPAID for a paid trade
// and ORDERCLOSED for one closed before (nil: closing is idempotent).
func (p *Provider) Close(ctx context.Context, raw []byte, orderNo string) error {
	c, err := parseConfig(raw)
	if err != nil {
		return err
	}
	if !orderNoPattern.MatchString(orderNo) {
		return fmt.Errorf("wechat close: order number %q is not a WeChat out_trade_no", clean(orderNo))
	}
	resp, err := p.call(ctx, p.Client, c, "close", "/pay/closeorder", map[string]string{"out_trade_no": orderNo})
	if err != nil {
		return err
	}
	if resp["result_code"] == "SUCCESS" {
		return nil
	}
	switch resp["err_code"] {
	case "ORDERCLOSED":
		return nil
	case "ORDERPAID":
		return payment.ErrTradePaid
	case "ORDERNOTEXIST":
		return payment.ErrTradeNotFound
	}
	return businessError("close", resp)
}

// tradeStates maps WeChat's trade_state. PAYERROR (a failed attempt, e.g.
// the bank declined) is not final: the payer may try again with the same
// code until it expires, so it is pending, not closed.
var tradeStates = map[string]payment.TradeState{
	"SUCCESS":    payment.TradePaid,
	"REFUND":     payment.TradeRefunded,
	"NOTPAY":     payment.TradePending,
	"USERPAYING": payment.TradePending,
	"PAYERROR":   payment.TradePending,
	"CLOSED":     payment.TradeClosed,
	"REVOKED":    payment.TradeClosed,
}

// Query calls /pay/orderquery by out_trade_no.
func (p *Provider) Query(ctx context.Context, raw []byte, orderNo string) (payment.Trade, error) {
	c, err := parseConfig(raw)
	if err != nil {
		return payment.Trade{}, err
	}
	if !orderNoPattern.MatchString(orderNo) {
		return payment.Trade{}, fmt.Errorf("wechat query: order number %q is not a WeChat out_trade_no", clean(orderNo))
	}
	resp, err := p.call(ctx, p.Client, c, "query", "/pay/orderquery", map[string]string{"out_trade_no": orderNo})
	if err != nil {
		return payment.Trade{}, err
	}
	if resp["result_code"] != "SUCCESS" {
		if resp["err_code"] == "ORDERNOTEXIST" {
			return payment.Trade{State: payment.TradeNotFound, OrderNo: orderNo, RawState: "ORDERNOTEXIST"}, nil
		}
		return payment.Trade{}, businessError("query", resp)
	}
	return readTrade(resp, orderNo)
}

// readTrade reads a successful orderquery answer. A trade that took money
// (paid, refunded) must name its amount and transaction_id; the others
// carry total_fee when WeChat sends it.
func readTrade(resp map[string]string, orderNo string) (payment.Trade, error) {
	raw := resp["trade_state"]
	state, ok := tradeStates[raw]
	if !ok {
		return payment.Trade{}, fmt.Errorf("wechat query answer: unknown trade_state %q", clean(raw))
	}
	if resp["out_trade_no"] != orderNo {
		return payment.Trade{}, errors.New("wechat query answer: not for this order")
	}
	t := payment.Trade{State: state, OrderNo: orderNo, TradeNo: resp["transaction_id"], RawState: raw}
	if ft := resp["fee_type"]; ft != "" && ft != "CNY" {
		return payment.Trade{}, fmt.Errorf("wechat query answer: fee_type %q", clean(ft))
	}
	if fee := resp["total_fee"]; fee != "" || state == payment.TradePaid || state == payment.TradeRefunded {
		if !feePattern.MatchString(fee) {
			return payment.Trade{}, fmt.Errorf("wechat query answer: total_fee %q is not a positive amount in fen", clean(fee))
		}
		t.AmountCents, _ = strconv.ParseInt(fee, 10, 64) // 16 digits at most: no overflow
	}
	if (t.TradeNo != "" || state == payment.TradePaid || state == payment.TradeRefunded) && !tradeNoPattern.MatchString(t.TradeNo) {
		return payment.Trade{}, fmt.Errorf("wechat query answer: transaction_id %q is not valid", clean(t.TradeNo))
	}
	return t, nil
}
