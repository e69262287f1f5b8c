package api

import (
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/commerce"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/payment"
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
		if _, err := s.Commerce.Activate(r.Context(), paid); err != nil {
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
	me := caller(r)
	after, err := s.Commerce.Mark(r.Context(), commerce.Actor{ID: me.ID, Role: me.Role}, id, commerce.Marking{Status: req.Status, PayMethod: req.PayMethod, TradeNo: req.PayTradeNo})
	if err != nil {
		return commerceError(err)
	}
	return httpx.OK(w, after)
}
