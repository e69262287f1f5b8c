package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// Warnings of a pay answer (pay.warning) and messages of activation.
const (
	MsgPayChannelOff     = "支付通道 %s 未开启,订单已创建,请开启通道后重新发起支付"
	MsgPayNoProvider     = "支付通道 %s 未接入,订单已创建"
	MsgPayPrepayFailed   = "支付通道 %s 预下单失败,订单已创建,请稍后重新发起支付"
	MsgPayMethodAdmin    = "pay_method 只能是 mobile_a、mobile_b、bank、offline 或 free"
	MsgOrderAmountDiffer = "支付金额与订单金额不符"
)

// maxNotifyBytes bounds a provider's notification body.
const maxNotifyBytes = 64 << 10

// channelSetting reads a channel's stored setting (zero: never saved). It
// is read from the database on every use, so a change applies at once.
func (s *Server) channelSetting(ctx context.Context, method string) (payment.ChannelSetting, error) {
	var c payment.ChannelSetting
	v, ok, err := s.Store.OptionValue(ctx, payment.OptionKey(method))
	if err != nil || !ok {
		return c, err
	}
	if json.Unmarshal([]byte(v), &c) != nil {
		return payment.ChannelSetting{}, nil // written by this code: never happens
	}
	return c, nil
}

// startPay produces the pay answer of pending order o with method and
// records the method (and the channel's pre-payment id) on the order. A
// channel that is off, without a provider, or whose pre-pay failed answers
// status warning: the order stays and can be paid later. An order that is
// no longer pending (paid or cancelled meanwhile) answers
// MsgOrderNotPending.
func (s *Server) startPay(r *http.Request, o *store.Order, method string) (payment.Pay, error) {
	ctx := r.Context()
	lang := httpx.Lang(r)
	warn := func(format string) payment.Pay {
		return payment.Pay{Status: payment.PayWarning, Warning: msgtext.Render(lang, format, method)}
	}
	pay := func() payment.Pay {
		c, err := s.channelSetting(ctx, method)
		if err != nil {
			s.Log.Error("read payment channel", "method", method, "err", err)
			return warn(MsgPayPrepayFailed)
		}
		if !c.Enabled {
			return warn(MsgPayChannelOff)
		}
		if method == payment.MethodBank {
			var bank payment.BankConfig
			_ = json.Unmarshal(c.Config, &bank)
			return payment.Pay{Status: payment.PayReady, Note: payment.BankNote(bank, o.OrderNo)}
		}
		prov := s.Providers[method]
		if prov == nil {
			return warn(MsgPayNoProvider)
		}
		p, err := prov.Prepay(ctx, c.Config, payment.Prepay{OrderNo: o.OrderNo, AmountCents: o.AmountCents,
			Subject: orderSubject(o), ClientIP: clientIP(r)})
		if err != nil {
			s.Log.Warn("payment prepay failed", "method", method, "order_no", o.OrderNo, "err", err)
			return warn(MsgPayPrepayFailed)
		}
		p.Status = payment.PayReady
		return p
	}()
	err := s.Store.SetOrderPayMethod(ctx, o.ID, o.UserID, method, pay.TradeNo)
	if errors.Is(err, store.ErrConflict) {
		return pay, httpx.Fail(MsgOrderNotPending)
	}
	if err != nil {
		return pay, err
	}
	o.PayMethod, o.PrepayID = method, pay.TradeNo
	return pay, nil
}

// orderSubject is what the wallet shows the payer.
func orderSubject(o *store.Order) string {
	if o.Type == order.TypeTopup {
		return fmt.Sprintf("余额充值 %.2f 元", order.CNY(o.AmountCents))
	}
	var info store.PlanInfo
	_ = json.Unmarshal([]byte(o.PlanInfo), &info)
	return "套餐 " + info.Name
}

// Activator is the one activation path of a verified payment (a provider's
// notification, the admin test pay): the order is found by number, the
// paid amount must equal the order's, and it activates exactly once
// (store.ActivateOrder). A repeat of a paid order with the same method is
// nil, so the provider hears success and stops retrying.
func (s *Server) Activator() payment.Activator { return s.activate }

func (s *Server) activate(ctx context.Context, p payment.Paid) error {
	_, err := s.activatePaid(ctx, p)
	return err
}

// activatePaid is activate answering the order after. In cluster mode the
// order is found here by number for its id, whose owner activates it
// (activateOrder): an order not replicated here yet is unknown, and the
// provider retries.
func (s *Server) activatePaid(ctx context.Context, p payment.Paid) (orderView, error) {
	a := store.Activation{OrderNo: p.OrderNo, Method: p.Method, TradeNo: p.TradeNo, AmountCents: p.AmountCents,
		CheckAmount: true, Now: time.Now().Unix()}
	var id int64
	if s.Cluster.Owner != nil {
		o, err := s.Store.OrderByNo(ctx, p.OrderNo)
		if errors.Is(err, store.ErrNotFound) {
			return orderView{}, payment.ErrUnknownOrder
		}
		if err != nil {
			return orderView{}, err
		}
		id = o.ID
	}
	o, activated, err := s.activateOrder(ctx, id, a)
	if err != nil {
		return o, err
	}
	if !activated && o.PayMethod != p.Method {
		return o, payment.ErrNotPending
	}
	return o, nil
}

// notify serves a wallet channel's payment notification: the provider
// verifies it under the channel's config, the activator applies it, and
// the provider answers in its own format. A notification that fails is
// logged (never its secrets) and changes nothing.
func (s *Server) notify(method string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		prov := s.Providers[method]
		if prov == nil {
			s.Log.Warn("payment notification for a channel without provider", "method", method)
			s.countCallback(method, "no_provider")
			return httpx.FailStatus(http.StatusNotFound, httpx.MsgNotFoundPath)
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxNotifyBytes)
		c, err := s.channelSetting(r.Context(), method)
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
		if err := s.activate(r.Context(), paid); err != nil {
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
	return "not_applied"
}

// testPayOrder is the admin test pay (Root): it pays a pending order
// through exactly the provider callback's path (activate), with the
// order's own amount and method (bank when it has none).
func (s *Server) testPayOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	o, err := s.Store.OrderByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgOrderNotFound)
	}
	if err != nil {
		return err
	}
	method := o.PayMethod
	if method == "" {
		method = payment.MethodBank
	}
	after, err := s.activatePaid(r.Context(), payment.Paid{Method: method, OrderNo: o.OrderNo, AmountCents: o.AmountCents,
		TradeNo: "TEST-" + o.OrderNo})
	if err := activationError(err); err != nil {
		return err
	}
	return httpx.OK(w, after)
}

// activationError is the client's message for an activation refusal.
func activationError(err error) error {
	var down ownerDown
	switch {
	case errors.As(err, &down):
		return httpx.Failf(MsgOrderOwnerDown, down.node)
	case errors.Is(err, payment.ErrUnknownOrder):
		return httpx.Fail(MsgOrderNotFound)
	case errors.Is(err, payment.ErrNotPending):
		return httpx.Fail(MsgOrderNotPending)
	case errors.Is(err, payment.ErrAmountMismatch):
		return httpx.Fail(MsgOrderAmountDiffer)
	}
	return err
}

type updateOrderRequest struct {
	Status     int    `json:"status"`
	PayMethod  string `json:"pay_method"`
	PayTradeNo string `json:"pay_trade_no"`
}

// updateOrder is the admin marking (spec: PUT /api/order/:id): status 1
// activates through store.ActivateOrder (a paid order stays as it is: a
// repeat credits nothing), status 3 refunds (a status flip only).
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
	switch req.Status {
	case order.StatusPaid:
		o, err := s.Store.OrderByID(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			return httpx.Fail(MsgOrderNotFound)
		}
		if err != nil {
			return err
		}
		method := req.PayMethod
		if method == "" {
			method = o.PayMethod
		}
		if method == "" {
			method = payment.MethodOffline
		}
		after, _, err := s.activateOrder(r.Context(), id, store.Activation{OrderID: id, Method: method,
			TradeNo: req.PayTradeNo, Now: time.Now().Unix()})
		if err := activationError(err); err != nil {
			return err
		}
		return httpx.OK(w, after)
	case order.StatusRefunded:
		_, err := s.Store.RefundOrder(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			return httpx.Fail(MsgOrderNotFound)
		}
		if err != nil {
			return err
		}
	default:
		return httpx.Fail(MsgOrderStatusInvalid)
	}
	return s.getOrder(w, r)
}
