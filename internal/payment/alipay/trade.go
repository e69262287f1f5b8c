package alipay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/modelgate/modelgate/internal/payment"
)

var _ payment.Trades = (*Provider)(nil)

// tradeNoPattern is an Alipay trade_no (28 digits today; at most 64).
var tradeNoPattern = regexp.MustCompile(`^[0-9A-Za-z_\-]{1,64}$`)

// temporaryCodes are the codes and sub_codes after which Alipay asks for
// a retry (20000 is "service unavailable").
var temporaryCodes = map[string]bool{
	"20000": true, "ACQ.SYSTEM_ERROR": true, "aop.ACQ.SYSTEM_ERROR": true, "isp.unknow-error": true,
}

// call signs an OpenAPI request of method with the app private key, posts
// it, and opens the answer's response object with Alipay's public key
// (openAnswer). The config's notify_url is not sent: these calls have no
// notification.
func (p *Provider) call(ctx context.Context, c config, method string, biz any) (json.RawMessage, answerStatus, bool, error) {
	op := strings.TrimPrefix(method, "alipay.trade.")
	gw, err := c.gateway()
	if err != nil {
		return nil, answerStatus{}, false, err
	}
	b, err := json.Marshal(biz)
	if err != nil {
		return nil, answerStatus{}, false, err
	}
	form := url.Values{
		"app_id":      {c.AppID},
		"method":      {method},
		"format":      {"JSON"},
		"charset":     {"utf-8"},
		"sign_type":   {"RSA2"},
		"timestamp":   {p.now().In(china).Format("2006-01-02 15:04:05")},
		"version":     {"1.0"},
		"biz_content": {string(b)},
	}
	s, err := signRSA2(c.private, []byte(signContent(form, true, "sign")))
	if err != nil {
		return nil, answerStatus{}, false, fmt.Errorf("alipay %s: sign: %w", op, err)
	}
	form.Set("sign", s)
	body, err := p.post(ctx, gw, form)
	if err != nil {
		return nil, answerStatus{}, false, fmt.Errorf("alipay %s: %w", op, err)
	}
	key := strings.ReplaceAll(method, ".", "_") + "_response"
	node, st, signed, err := openAnswer(body, key, c.public)
	if err != nil {
		return nil, st, false, fmt.Errorf("alipay %s: %w", op, err)
	}
	return node, st, signed, nil
}

// providerError is the payment.ProviderError of an answer whose code is
// not 10000: the sub_code names the reason, the code when there is none.
func providerError(op string, st answerStatus) error {
	code, msg := st.SubCode, st.SubMsg
	if code == "" {
		code, msg = st.Code, st.Msg
	}
	return &payment.ProviderError{
		Method: payment.MethodAlipay, Op: op, Code: clean(code), Message: clean(msg),
		Temporary: temporaryCodes[st.Code] || temporaryCodes[st.SubCode],
	}
}

// orderOnly is the biz_content of close and query.
type orderOnly struct {
	OutTradeNo string `json:"out_trade_no"`
}

// tradeAnswer holds the fields of close, query and refund answers read here.
type tradeAnswer struct {
	OutTradeNo  string `json:"out_trade_no"`
	TradeNo     string `json:"trade_no"`
	TradeStatus string `json:"trade_status"`
	TotalAmount string `json:"total_amount"`
	FundChange  string `json:"fund_change"`
	RefundFee   string `json:"refund_fee"`
}

func decodeTrade(node json.RawMessage, orderNo, op string) (tradeAnswer, error) {
	var a tradeAnswer
	if err := json.Unmarshal(node, &a); err != nil {
		return a, fmt.Errorf("alipay %s answer: %w", op, err)
	}
	if a.OutTradeNo != orderNo {
		return a, fmt.Errorf("alipay %s answer: not for this order", op)
	}
	if a.TradeNo != "" && !tradeNoPattern.MatchString(a.TradeNo) {
		return a, fmt.Errorf("alipay %s answer: trade_no %q is not valid", op, clean(a.TradeNo))
	}
	return a, nil
}

func checkOrderNo(op, orderNo string) error {
	if !orderNoPattern.MatchString(orderNo) {
		return fmt.Errorf("alipay %s: order number %q is not an Alipay out_trade_no", op, clean(orderNo))
	}
	return nil
}

// Close calls alipay.trade.close. Alipay answers ACQ.TRADE_STATUS_ERROR
// both for a paid trade and for one closed before, so that answer is
// resolved by a query; ACQ.TRADE_NOT_EXIST is a precreate code nobody
// has scanned yet (payment.ErrTradeNotFound).
func (p *Provider) Close(ctx context.Context, raw []byte, orderNo string) error {
	c, err := parseConfig(raw, true)
	if err != nil {
		return err
	}
	if err := checkOrderNo("close", orderNo); err != nil {
		return err
	}
	node, st, signed, err := p.call(ctx, c, "alipay.trade.close", orderOnly{orderNo})
	if err != nil {
		return err
	}
	switch {
	case st.Code == "10000":
		_, err := decodeTrade(node, orderNo, "close")
		return err
	case signed && st.SubCode == "ACQ.TRADE_NOT_EXIST":
		return payment.ErrTradeNotFound
	case st.SubCode == "ACQ.TRADE_STATUS_ERROR":
		t, err := p.Query(ctx, raw, orderNo)
		if err != nil {
			return fmt.Errorf("alipay close: trade status: %w", err)
		}
		switch t.State {
		case payment.TradeClosed:
			return nil
		case payment.TradePaid, payment.TradeRefunded:
			return payment.ErrTradePaid
		}
		return fmt.Errorf("alipay close: refused while the trade is %s", t.RawState)
	}
	return providerError("close", st)
}

// tradeStatuses maps Alipay's trade_status.
var tradeStatuses = map[string]payment.TradeState{
	"WAIT_BUYER_PAY": payment.TradePending,
	"TRADE_CLOSED":   payment.TradeClosed,
	"TRADE_SUCCESS":  payment.TradePaid,
	"TRADE_FINISHED": payment.TradePaid,
}

// Query calls alipay.trade.query by out_trade_no. Only a signed
// ACQ.TRADE_NOT_EXIST is TradeNotFound; an unsigned one is an error.
func (p *Provider) Query(ctx context.Context, raw []byte, orderNo string) (payment.Trade, error) {
	c, err := parseConfig(raw, true)
	if err != nil {
		return payment.Trade{}, err
	}
	if err := checkOrderNo("query", orderNo); err != nil {
		return payment.Trade{}, err
	}
	node, st, signed, err := p.call(ctx, c, "alipay.trade.query", orderOnly{orderNo})
	if err != nil {
		return payment.Trade{}, err
	}
	if st.Code != "10000" {
		if signed && st.SubCode == "ACQ.TRADE_NOT_EXIST" {
			return payment.Trade{State: payment.TradeNotFound, OrderNo: orderNo, RawState: st.SubCode}, nil
		}
		return payment.Trade{}, providerError("query", st)
	}
	a, err := decodeTrade(node, orderNo, "query")
	if err != nil {
		return payment.Trade{}, err
	}
	state, ok := tradeStatuses[a.TradeStatus]
	if !ok {
		return payment.Trade{}, fmt.Errorf("alipay query answer: unknown trade_status %q", clean(a.TradeStatus))
	}
	fen, err := ParseYuan(a.TotalAmount)
	if err != nil || fen <= 0 {
		return payment.Trade{}, fmt.Errorf("alipay query answer: total_amount %q is not a positive amount", clean(a.TotalAmount))
	}
	if state == payment.TradePaid && a.TradeNo == "" {
		return payment.Trade{}, errors.New("alipay query answer: a paid trade without trade_no")
	}
	return payment.Trade{State: state, OrderNo: orderNo, AmountCents: fen, TradeNo: a.TradeNo, RawState: a.TradeStatus}, nil
}

// refundBiz is alipay.trade.refund's biz_content.
type refundBiz struct {
	OutTradeNo   string `json:"out_trade_no"`
	TradeNo      string `json:"trade_no,omitempty"`
	RefundAmount string `json:"refund_amount"`
	OutRequestNo string `json:"out_request_no"`
	RefundReason string `json:"refund_reason,omitempty"`
}

// Refund calls alipay.trade.refund. out_request_no is the idempotency
// key: Alipay answers a repeat of a refund it made with success and
// fund_change N (Settled false), and refuses the same out_request_no with
// another amount. refund_fee in the answer is the trade's total refunded
// so far, so it is at least this refund.
func (p *Provider) Refund(ctx context.Context, raw []byte, r payment.RefundRequest) (payment.Refunded, error) {
	c, err := parseConfig(raw, true)
	if err != nil {
		return payment.Refunded{}, err
	}
	if err := checkOrderNo("refund", r.OrderNo); err != nil {
		return payment.Refunded{}, err
	}
	if !orderNoPattern.MatchString(r.RefundNo) || (r.TradeNo != "" && !tradeNoPattern.MatchString(r.TradeNo)) {
		return payment.Refunded{}, errors.New("alipay refund: refund number or trade_no is not valid for Alipay")
	}
	if err := payment.ValidateRefund(r); err != nil {
		return payment.Refunded{}, fmt.Errorf("alipay refund: %w", err)
	}
	if r.TotalCents > maxFen {
		return payment.Refunded{}, fmt.Errorf("alipay refund: total %d fen is above Alipay's limit", r.TotalCents)
	}
	node, st, _, err := p.call(ctx, c, "alipay.trade.refund", refundBiz{
		OutTradeNo: r.OrderNo, TradeNo: r.TradeNo, RefundAmount: FormatYuan(r.AmountCents),
		OutRequestNo: r.RefundNo, RefundReason: subject(r.Reason, ""),
	})
	if err != nil {
		return payment.Refunded{}, err
	}
	if st.Code != "10000" {
		return payment.Refunded{}, providerError("refund", st)
	}
	a, err := decodeTrade(node, r.OrderNo, "refund")
	if err != nil {
		return payment.Refunded{}, err
	}
	total, err := ParseYuan(a.RefundFee)
	if err != nil || total < r.AmountCents || (a.FundChange != "Y" && a.FundChange != "N") {
		return payment.Refunded{}, errors.New("alipay refund answer: refund_fee or fund_change do not fit this refund")
	}
	return payment.Refunded{RefundNo: r.RefundNo, RefundID: a.TradeNo, AmountCents: r.AmountCents, Settled: a.FundChange == "Y"}, nil
}
