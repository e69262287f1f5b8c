package commerce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// Reasons of a payment exception (issue 26, §3). The upgrade reasons are
// NotActivatable's (store.UpgradeReplacedInactive, store.UpgradeRepriced).
const (
	// ReasonCancelled: the order was cancelled (by its user, superseded by
	// a newer upgrade, or expired: all status 2).
	ReasonCancelled = "cancelled"
	// ReasonRefunded: the order was refunded (status 3).
	ReasonRefunded = "refunded"
	// ReasonPaidOtherTrade: the order is paid already, by another trade
	// (the other wallet after a re-pay switch, an admin's marking).
	ReasonPaidOtherTrade = "paid_other_trade"
	// ReasonAdminRefund: not an exception but an admin's refund through
	// the provider (PUT /api/order/:id, refund_via_provider), recorded in
	// the same table so one trade is refunded at most once.
	ReasonAdminRefund = "admin_refund"
)

// testTradePrefix marks the trade number of the root's test pay: no money
// moved, so nothing is refunded at a provider.
const testTradePrefix = "TEST-"

// refundReason is what the payer's wallet shows beside the refund.
const refundReason = "订单已关闭或无法履约,原路退回"

// Applied is the outcome of a verified payment: its order after, and the
// payment exception it became when the order could not take it (nil when
// it activated the order or repeated the payment that did).
type Applied struct {
	Order     OrderView
	Exception *store.PaymentException
	// Refusal is why the order did not take an exception's payment: a
	// *NotActivatable or payment.ErrNotPending.
	Refusal error
}

// ApplyPayment applies a verified payment (a provider's notification, the
// reconciler's query, the root's test pay) through the one activation path
// (Activate). A payment the order cannot take — cancelled, expired,
// refunded, paid by another trade, or an upgrade that is no longer
// activatable — is recorded as a payment exception, once per (method,
// trade_no), and refunded through the provider where the channel can
// (the call that recorded it refunds; its refund number is derived from
// the trade, so even two nodes refund once at the provider). Such a payment
// answers nil: the provider must hear success and stop retrying. An
// unknown order, an amount that differs and an unreachable owner are
// errors (the provider retries; docs/payments.md).
func (s *Service) ApplyPayment(ctx context.Context, p payment.Paid) (Applied, error) {
	v, activated, err := s.activatePaid(ctx, p)
	reason := ""
	var na *NotActivatable
	switch {
	case errors.As(err, &na):
		reason = na.Reason
	case errors.Is(err, payment.ErrNotPending):
		reason = notPendingReason(v.Status)
	case err != nil:
		return Applied{Order: v}, err
	case !activated && (v.PayMethod != p.Method || v.PayTradeNo != "" && p.TradeNo != "" && v.PayTradeNo != p.TradeNo):
		// Paid already, by another payment of the order (an admin's
		// marking of the same method without a trade number is the
		// same payment: the operator recorded it by hand).
		reason, err = ReasonPaidOtherTrade, payment.ErrNotPending
	default:
		return Applied{Order: v}, nil
	}
	e, rerr := s.recordException(ctx, p, reason)
	if rerr != nil {
		return Applied{Order: v}, rerr
	}
	return Applied{Order: v, Exception: &e, Refusal: err}, nil
}

// notPendingReason is the exception reason of an order of status that
// refused a payment as not pending.
func notPendingReason(status int) string {
	switch status {
	case order.StatusCancelled:
		return ReasonCancelled
	case order.StatusRefunded:
		return ReasonRefunded
	}
	return ReasonPaidOtherTrade
}

// recordException records payment p as an exception for reason and, when
// this call recorded it, refunds it through the provider.
func (s *Service) recordException(ctx context.Context, p payment.Paid, reason string) (store.PaymentException, error) {
	e := store.PaymentException{OrderNo: p.OrderNo, AmountCents: p.AmountCents, PayMethod: p.Method,
		TradeNo: p.TradeNo, Reason: reason, Status: store.ExceptionOpen}
	if o, err := s.Store.OrderByNo(ctx, p.OrderNo); err == nil {
		e.OrderID, e.UserID = o.ID, o.UserID
	}
	created, err := s.Store.RecordPaymentException(ctx, &e, s.now().Unix())
	if err != nil {
		return e, err
	}
	if !created {
		return e, nil
	}
	s.log().Warn("payment recorded as exception", "method", p.Method, "order_no", p.OrderNo,
		"amount_cents", p.AmountCents, "reason", reason, "exception_id", e.ID)
	return s.refundException(ctx, e), nil
}

// ExceptionRefundNo is the refund number of the refund of trade tradeNo
// of method: derived from the payment, not from the exception row, so a
// refund asked twice (two nodes, a retry) is one refund at the provider,
// which deduplicates on it. 32 characters of [0-9a-z].
func ExceptionRefundNo(method, tradeNo string) string {
	h := sha256.Sum256([]byte(method + "\x00" + tradeNo))
	return "RX" + hex.EncodeToString(h[:15])
}

// refundException refunds exception e's payment in full through its
// channel's provider and records the outcome; a channel without provider
// refunds (bank) and the test pay leave it open for a person.
func (s *Service) refundException(ctx context.Context, e store.PaymentException) store.PaymentException {
	if strings.HasPrefix(e.TradeNo, testTradePrefix) {
		return e
	}
	tr, config, ok := s.trades(ctx, e.PayMethod)
	if !ok {
		return e
	}
	refundNo := ExceptionRefundNo(e.PayMethod, e.TradeNo)
	status, outcome := refundOutcome(tr.Refund(ctx, config, payment.RefundRequest{OrderNo: e.OrderNo, TradeNo: e.TradeNo,
		AmountCents: e.AmountCents, TotalCents: e.AmountCents, RefundNo: refundNo, Reason: refundReason}))
	after, err := s.Store.SetPaymentExceptionRefund(ctx, e.ID, status, refundNo, outcome, s.now().Unix())
	if err != nil {
		s.log().Error("record exception refund", "exception_id", e.ID, "status", status, "outcome", outcome, "err", err)
		return e
	}
	if status != store.ExceptionRefunded {
		s.log().Warn("payment exception not refunded", "exception_id", e.ID, "outcome", outcome)
	}
	return after
}

// refundOutcome is the stored status and outcome text of a refund call.
func refundOutcome(r payment.Refunded, err error) (status, outcome string) {
	if err != nil {
		msg := err.Error()
		if len(msg) > 200 {
			msg = strings.ToValidUTF8(msg[:200], "")
		}
		return store.ExceptionRefundFailed, "refund failed: " + msg
	}
	outcome = "refund accepted"
	if r.RefundID != "" {
		outcome += ", refund id " + r.RefundID
	}
	if r.Settled {
		outcome += ", settled"
	}
	return store.ExceptionRefunded, outcome
}

// trades answers the provider calls of a wallet method and its channel's
// current config; ok is false for a method without them.
func (s *Service) trades(ctx context.Context, method string) (payment.Trades, []byte, bool) {
	if method != payment.MethodWechat && method != payment.MethodAlipay {
		return nil, nil, false
	}
	tr, ok := s.Providers[method].(payment.Trades)
	if !ok {
		return nil, nil, false
	}
	c, err := s.ChannelSetting(ctx, method)
	if err != nil || len(c.Config) == 0 {
		if err != nil {
			s.log().Error("read payment channel", "method", method, "err", err)
		}
		return nil, nil, false
	}
	return tr, c.Config, true
}

// MsgExceptionNotFound answers an unknown payment exception id.
const MsgExceptionNotFound = "支付异常记录不存在"

// ExceptionView is a payment exception as answers show it (amount in CNY).
type ExceptionView struct {
	ID            int64   `json:"id"`
	OrderID       int64   `json:"order_id"`
	OrderNo       string  `json:"order_no"`
	UserID        int64   `json:"user_id"`
	Amount        float64 `json:"amount"`
	PayMethod     string  `json:"pay_method"`
	TradeNo       string  `json:"trade_no"`
	Reason        string  `json:"reason"`
	Status        string  `json:"status"`
	Note          string  `json:"note"`
	RefundNo      string  `json:"refund_no"`
	RefundOutcome string  `json:"refund_outcome"`
	RefundTime    int64   `json:"refund_time"`
	CreateTime    int64   `json:"create_time"`
	UpdateTime    int64   `json:"update_time"`
}

// ViewException is e as answers show it.
func ViewException(e *store.PaymentException) ExceptionView {
	return ExceptionView{ID: e.ID, OrderID: e.OrderID, OrderNo: e.OrderNo, UserID: e.UserID,
		Amount: order.CNY(e.AmountCents), PayMethod: e.PayMethod, TradeNo: e.TradeNo, Reason: e.Reason,
		Status: e.Status, Note: e.Note, RefundNo: e.RefundNo, RefundOutcome: e.RefundOutcome,
		RefundTime: e.RefundTime, CreateTime: e.CreateTime, UpdateTime: e.UpdateTime}
}

// ResolveException marks exception id resolved with an admin's note.
func (s *Service) ResolveException(ctx context.Context, id int64, note string) (ExceptionView, error) {
	e, err := s.Store.ResolvePaymentException(ctx, id, note, s.now().Unix())
	if errors.Is(err, store.ErrNotFound) {
		return ExceptionView{}, refuse(MsgExceptionNotFound)
	}
	if err != nil {
		return ExceptionView{}, err
	}
	return ViewException(&e), nil
}

// Messages of the exception and provider-refund routes.
const (
	MsgExceptionStatus         = "status 只能是 open、refunded、refund_failed 或 resolved"
	MsgExceptionResolveOnly    = "status 只能是 resolved"
	MsgExceptionNoteRequired   = "请填写处理说明 note"
	MsgRefundViaProviderStatus = "refund_via_provider 只能与 status 3(已退款)一起使用"
	MsgRefundNotWallet         = "该订单没有微信或支付宝的支付记录,无法原路退款"
)

// MarkRefundedViaProvider is the admin's refund with refund_via_provider
// (PUT /api/order/:id status 3): the spec's status flip (Mark), then the
// order's payment refunded in full through its wallet's provider, recorded
// in payment_exceptions (reason admin_refund) whose (method, trade_no) key
// makes one trade refunded at most once; a refund that failed before is
// asked again with the same refund number. The order must have been paid
// through mobile_a or mobile_b with a provider trade number.
func (s *Service) MarkRefundedViaProvider(ctx context.Context, actor Actor, id int64) (OrderView, *ExceptionView, error) {
	o, err := s.Order(ctx, id)
	if err != nil {
		return OrderView{}, nil, err
	}
	if err := s.mayCredit(ctx, actor, o); err != nil {
		return OrderView{}, nil, err
	}
	if (o.PayMethod != payment.MethodWechat && o.PayMethod != payment.MethodAlipay) || o.PayTradeNo == "" ||
		strings.HasPrefix(o.PayTradeNo, testTradePrefix) || o.AmountCents <= 0 || o.PayTime == 0 {
		return OrderView{}, nil, refuse(MsgRefundNotWallet)
	}
	after, err := s.Mark(ctx, actor, id, Marking{Status: order.StatusRefunded})
	if err != nil {
		return after, nil, err
	}
	e := store.PaymentException{OrderID: o.ID, OrderNo: o.OrderNo, UserID: o.UserID, AmountCents: o.AmountCents,
		PayMethod: o.PayMethod, TradeNo: o.PayTradeNo, Reason: ReasonAdminRefund, Status: store.ExceptionOpen}
	if _, err := s.Store.RecordPaymentException(ctx, &e, s.now().Unix()); err != nil {
		return after, nil, err
	}
	if e.Status == store.ExceptionOpen || e.Status == store.ExceptionRefundFailed {
		e = s.refundException(ctx, e)
	}
	v := ViewException(&e)
	return after, &v, nil
}
