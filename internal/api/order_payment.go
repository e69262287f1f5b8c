package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/commerce"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/textfield"
)

// MsgPayMethodAdmin refuses a method an admin may not mark.
const MsgPayMethodAdmin = "pay_method 只能是 mobile_a、mobile_b、bank、offline 或 free"

// maxNotifyBytes bounds a provider's notification body.
const maxNotifyBytes = 64 << 10

// commerceError is the client's answer to a commerce refusal: its message
// rendered in the client's language; any other error is returned as is.
func commerceError(err error) error {
	var ref *commerce.Refusal
	if errors.As(err, &ref) {
		if len(ref.Args) > 0 {
			return httpx.Failf(ref.Format, ref.Args...)
		}
		return httpx.Fail(ref.Format)
	}
	return err
}

// payer is the request's caller as the one who pays.
func payer(r *http.Request) commerce.Payer {
	return commerce.Payer{UserID: caller(r).ID, ClientIP: clientIP(r), Lang: httpx.Lang(r)}
}

// Activator is the one activation path of a verified payment (a provider's
// notification, the admin test pay), commerce.Service.Activate.
func (s *Server) Activator() payment.Activator { return s.Commerce.Activator() }

// notify serves a wallet channel's payment notification: the provider
// verifies it under the channel's config, the commerce service applies
// it, and the provider answers in its own format. A notification that
// fails is logged (never its secrets) and changes nothing.
func (s *Server) notify(method string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		prov := s.Providers[method]
		if prov == nil {
			s.Log.Warn("payment notification for a channel without provider", "method", method)
			s.countCallback(method, "no_provider")
			return httpx.FailStatus(http.StatusNotFound, httpx.MsgNotFoundPath)
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxNotifyBytes)
		c, err := s.Commerce.ChannelSetting(r.Context(), method)
		if err != nil {
			s.Log.Error("payment notification: read channel", "method", method, "err", err)
			s.countCallback(method, "channel_unavailable")
			prov.Reply(w, false)
			return nil
		}
		paid, err := prov.Notify(r, c.Config)
		if err != nil {
			s.Log.Warn("payment notification refused", "method", method, "remote", clientIP(r), "err", err)
			s.countCallback(method, "not_verified")
			prov.Reply(w, false)
			return nil
		}
		paid.Method = method
		applied, err := s.Commerce.ApplyPayment(r.Context(), paid)
		if err == nil && applied.Exception != nil {
			// Money the order could not take: recorded (and refunded where
			// the channel can); the provider hears success and stops.
			s.countCallback(method, "exception")
			prov.Reply(w, true)
			return nil
		}
		if err != nil {
			s.Log.Warn("payment notification not applied", "method", method, "order_no", paid.OrderNo,
				"amount_cents", paid.AmountCents, "err", err)
			s.countCallback(method, callbackReason(err))
			prov.Reply(w, false)
			return nil
		}
		s.countCallback(method, "")
		prov.Reply(w, true)
		return nil
	}
}

// countCallback counts a payment notification for metrics: accepted when
// reason is "", else rejected for reason.
func (s *Server) countCallback(method, reason string) {
	if s.PaymentCallback != nil {
		s.PaymentCallback(method, reason == "", reason)
	}
}

// callbackReason is the metrics reason of a notification the activator
// refused: a fixed word, never the error's text.
func callbackReason(err error) string {
	switch {
	case errors.Is(err, payment.ErrUnknownOrder):
		return "unknown_order"
	case errors.Is(err, payment.ErrAmountMismatch):
		return "amount_mismatch"
	case errors.Is(err, payment.ErrNotPending):
		return "not_pending"
	}
	var na *commerce.NotActivatable
	if errors.As(err, &na) {
		return "not_activatable"
	}
	return "not_applied"
}

// testPayOrder is the admin test pay (Root): it pays a pending order
// through exactly the provider callback's path.
func (s *Server) testPayOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	after, err := s.Commerce.TestPay(r.Context(), id)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, after)
}

type updateOrderRequest struct {
	Status     int    `json:"status"`
	PayMethod  string `json:"pay_method"`
	PayTradeNo string `json:"pay_trade_no"`
	// RefundViaProvider (status 3): also refund the payment through its
	// wallet's provider (issue 26, §3).
	RefundViaProvider bool `json:"refund_via_provider"`
}

// refundedOrder is the answer of a status-3 marking with
// refund_via_provider: the order and the provider refund's record.
type refundedOrder struct {
	commerce.OrderView
	Refund *commerce.ExceptionView `json:"refund,omitempty"`
}

// updateOrder is the admin marking (spec: PUT /api/order/:id):
// commerce.Service.Mark.
func (s *Server) updateOrder(w http.ResponseWriter, r *http.Request) error {
	var req updateOrderRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if msg := payTradeNoText.Validate(req.PayTradeNo); msg != "" {
		return httpx.Fail(msg)
	}
	switch req.PayMethod {
	case "", payment.MethodWechat, payment.MethodAlipay, payment.MethodBank, payment.MethodOffline, payment.MethodFree:
	default:
		return httpx.Fail(MsgPayMethodAdmin)
	}
	if req.RefundViaProvider && req.Status != 3 {
		return httpx.Fail(commerce.MsgRefundViaProviderStatus)
	}
	me := caller(r)
	if req.RefundViaProvider {
		after, refund, err := s.Commerce.MarkRefundedViaProvider(r.Context(), commerce.Actor{ID: me.ID, Role: me.Role}, id)
		if err != nil {
			return commerceError(err)
		}
		return httpx.OK(w, refundedOrder{OrderView: after, Refund: refund})
	}
	after, err := s.Commerce.Mark(r.Context(), commerce.Actor{ID: me.ID, Role: me.Role}, id, commerce.Marking{Status: req.Status, PayMethod: req.PayMethod, TradeNo: req.PayTradeNo})
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, after)
}

// exceptionNoteText bounds an admin's note on a payment exception.
var exceptionNoteText = textfield.Field{Label: "note", MaxChars: 500, Multiline: true}

// listPaymentExceptions lists the payment exceptions (Admin), newest
// first, paginated like the other lists; status filters.
func (s *Server) listPaymentExceptions(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.ExceptionOpen, store.ExceptionRefunded, store.ExceptionRefundFailed, store.ExceptionResolved:
	default:
		return httpx.Fail(commerce.MsgExceptionStatus)
	}
	rows, total, err := s.Store.ListPaymentExceptions(r.Context(), status, pg)
	if err != nil {
		return err
	}
	views := make([]commerce.ExceptionView, len(rows))
	for i := range rows {
		views[i] = commerce.ViewException(&rows[i])
	}
	return httpx.OKList(w, views, total)
}

type resolveExceptionRequest struct {
	Status string `json:"status"`
	Note   string `json:"note"`
}

// resolvePaymentException marks a payment exception resolved with a note
// (Admin): PUT /api/payment/exceptions/:id {status: "resolved", note}.
func (s *Server) resolvePaymentException(w http.ResponseWriter, r *http.Request) error {
	var req resolveExceptionRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if req.Status != store.ExceptionResolved {
		return httpx.Fail(commerce.MsgExceptionResolveOnly)
	}
	if msg := exceptionNoteText.Validate(req.Note); msg != "" {
		return httpx.Fail(msg)
	}
	if strings.TrimSpace(req.Note) == "" {
		return httpx.Fail(commerce.MsgExceptionNoteRequired)
	}
	e, err := s.Commerce.ResolveException(r.Context(), id, req.Note)
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, e)
}
