package payment

import (
	"context"
	"errors"
	"fmt"
)

// Trades is the after-payment capability of a wallet channel (mobile_a,
// mobile_b), beside Provider: close an unpaid trade, query a trade's state,
// refund a paid one. It is a second interface, found by type assertion on
// a Provider, so a channel without these calls (and the tests' simple
// fakes) need not stub them. config is the channel's stored configuration,
// as for Provider; orderNo is our out_trade_no.
type Trades interface {
	// Close closes the unpaid trade of orderNo so it can no longer be paid.
	// nil: closed now or before. ErrTradePaid: it was paid (the caller must
	// treat the payment). ErrTradeNotFound: the provider has no trade for
	// it (for Alipay, a precreate code nobody scanned yet: the code itself
	// stays payable until its expire_at, so a later payment must still be
	// expected). Any other error: try again later.
	Close(ctx context.Context, config []byte, orderNo string) error
	// Query answers the provider's view of the trade of orderNo. A trade
	// the provider does not know is State TradeNotFound with a nil error.
	Query(ctx context.Context, config []byte, orderNo string) (Trade, error)
	// Refund refunds (part of) a paid trade. Repeating a call with the same
	// RefundNo never refunds twice (both providers deduplicate on it), so a
	// refund whose outcome is unknown (timeout) is retried with the same
	// RefundNo.
	Refund(ctx context.Context, config []byte, r RefundRequest) (Refunded, error)
}

// TradeState is a trade's state at the provider, mapped from WeChat's
// trade_state and Alipay's trade_status (docs/payments.md, Provider calls).
type TradeState string

// Trade states.
const (
	// TradePending: created and not paid; the payer may still pay
	// (WeChat NOTPAY, USERPAYING, PAYERROR; Alipay WAIT_BUYER_PAY).
	TradePending TradeState = "pending"
	// TradePaid: the money was received (WeChat SUCCESS; Alipay
	// TRADE_SUCCESS, TRADE_FINISHED).
	TradePaid TradeState = "paid"
	// TradeClosed: can no longer be paid (WeChat CLOSED, REVOKED; Alipay
	// TRADE_CLOSED, which Alipay also reports for a paid trade refunded in
	// full).
	TradeClosed TradeState = "closed"
	// TradeRefunded: paid, then (partly) refunded (WeChat REFUND).
	TradeRefunded TradeState = "refunded"
	// TradeNotFound: the provider has no trade for this order number
	// (WeChat ORDERNOTEXIST; Alipay ACQ.TRADE_NOT_EXIST, also for a
	// precreate code not scanned yet).
	TradeNotFound TradeState = "not_found"
)

// Trade is a verified query answer.
type Trade struct {
	State       TradeState
	OrderNo     string
	AmountCents int64  // the trade's total in fen; 0 when the provider did not say (not found)
	TradeNo     string // the provider's payment id (WeChat transaction_id, Alipay trade_no); may be empty unless paid
	RawState    string // the provider's own state name, for logs
}

// RefundRequest is a refund to ask a provider for.
type RefundRequest struct {
	OrderNo     string // out_trade_no of the paid order
	TradeNo     string // the provider's payment id, optional (sent when known)
	AmountCents int64  // this refund, fen, 1..TotalCents
	TotalCents  int64  // the order's paid amount, fen
	RefundNo    string // ours, unique per refund: the idempotency key
	Reason      string // optional, shown to the payer
}

// Refunded is a provider's acceptance of a refund.
type Refunded struct {
	RefundNo    string // the request's RefundNo, echoed by the provider
	RefundID    string // the provider's id of the refund (WeChat refund_id; Alipay has none and answers its trade_no)
	AmountCents int64  // this refund's amount, fen
	// Settled: the provider says the money has moved (Alipay fund_change
	// Y). False: accepted and completing asynchronously (WeChat), or a
	// repeat of a refund already made (Alipay fund_change N).
	Settled bool
}

// Errors of the trade calls.
var (
	ErrTradePaid     = errors.New("trade is paid")
	ErrTradeNotFound = errors.New("provider has no such trade")
)

// ProviderError is a business failure a provider answered (WeChat
// result_code FAIL with err_code, Alipay a code other than 10000 with
// sub_code). Temporary says that the same call may succeed later (a system
// error or rate limit at the provider); anything else needs a person.
type ProviderError struct {
	Method    string // MethodWechat or MethodAlipay
	Op        string // close, query, refund
	Code      string // err_code (WeChat) or sub_code, else code (Alipay)
	Message   string // err_code_des / sub_msg, cleaned for logs
	Temporary bool
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("%s %s: %s %s", e.Method, e.Op, e.Code, e.Message)
}

// ValidateRefund checks a refund's amounts before any provider is called:
// 1 ≤ AmountCents ≤ TotalCents, and a RefundNo.
func ValidateRefund(r RefundRequest) error {
	if r.TotalCents <= 0 || r.AmountCents <= 0 || r.AmountCents > r.TotalCents {
		return fmt.Errorf("refund %d of %d fen is not 1..total", r.AmountCents, r.TotalCents)
	}
	if r.RefundNo == "" {
		return errors.New("refund number is empty")
	}
	return nil
}
