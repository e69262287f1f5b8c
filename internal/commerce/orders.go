package commerce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the order use-cases (the spec does not fix them).
const (
	MsgOrderNotFound      = "订单不存在"
	MsgOrderNotPending    = "订单不是待支付状态"
	MsgOrderModeInvalid   = "mode 只能是 stack 或 price_diff"
	MsgOrderPlanUnlisted  = "套餐不存在或已下架"
	MsgOrderAmountTooHigh = "套餐价格超出订单金额上限"
	MsgOrderAmountDiffer  = "支付金额与订单金额不符"
	// MsgPendingLimit takes the limit (option MaxPendingOrders).
	MsgPendingLimit = "待支付订单已达上限 %d 个,请先支付或取消已有的订单"
	// MsgOrderOwnerDown takes the owner's node id.
	MsgOrderOwnerDown = "订单所属的集群节点 %d 暂时无法处理该操作,请稍后重试"
)

// Warnings of a pay answer (pay.warning); they take the method.
const (
	MsgPayChannelOff   = "支付通道 %s 未开启,订单已创建,请开启通道后重新发起支付"
	MsgPayNoProvider   = "支付通道 %s 未接入,订单已创建"
	MsgPayPrepayFailed = "支付通道 %s 预下单失败,订单已创建,请稍后重新发起支付"
)

// Payer is who starts a payment: the wallet sees the client's IP, and the
// pay answer's warning is in the client's language.
type Payer struct {
	UserID   int64
	ClientIP string
	Lang     msgtext.Lang
}

// SelfPayMethod checks a method a user may pay with: the spec's top-up
// messages for an unknown one and for offline and free ("" when allowed).
func SelfPayMethod(method string) string {
	switch method {
	case payment.MethodWechat, payment.MethodAlipay, payment.MethodBank:
		return ""
	case payment.MethodOffline, payment.MethodFree:
		return order.MsgPayMethodNotSelf
	case "":
		return order.MsgPayMethodRequired
	}
	return order.MsgPayMethodUnknown
}

// CreatePlanOrder creates a pending plan order (spec: POST
// /api/order/plan) of plan planID in mode for the payer and, when
// payMethod is given, starts its payment. stack: full price, TB.
// price_diff: the price less the residual value of the payer's
// earliest-expiring active subscription, UP; with no active subscription
// the full price (docs/decisions/commerce.md).
func (s *Service) CreatePlanOrder(ctx context.Context, who Payer, planID int64, mode, payMethod string) (Placed, error) {
	if mode != order.ModeStack && mode != order.ModePriceDiff {
		return Placed{}, refuse(MsgOrderModeInvalid)
	}
	if payMethod != "" {
		if msg := SelfPayMethod(payMethod); msg != "" {
			return Placed{}, refuse(msg)
		}
	}
	p, err := s.Store.PlanByID(ctx, planID)
	if errors.Is(err, store.ErrNotFound) || err == nil && p.Status != plan.StatusListed {
		return Placed{}, refuse(MsgOrderPlanUnlisted)
	}
	if err != nil {
		return Placed{}, err
	}
	price, err := order.Cents(p.Price)
	if err != nil {
		return Placed{}, refuse(MsgOrderAmountTooHigh)
	}
	now := s.now()
	o := store.Order{Type: order.TypePlan, Source: order.SourceSelf, UserID: who.UserID, PlanID: p.ID,
		AmountCents: price, Mode: mode, PayMethod: payMethod}
	prefix := order.PrefixStack
	if mode == order.ModePriceDiff {
		prefix = order.PrefixUpgrade
		subs, err := s.Store.ActiveUserPlans(ctx, who.UserID, now.Unix())
		if err != nil {
			return Placed{}, err
		}
		if len(subs) > 0 {
			old := subs[0]
			paid, err := s.Store.PaidForSubscription(ctx, old)
			if err != nil {
				return Placed{}, err
			}
			o.ReplacesID = old.ID
			o.AmountCents = order.UpgradeCents(price, paid, old.EndTime-now.Unix(), old.EndTime-old.StartTime)
		}
	}
	info, _ := json.Marshal(store.PlanInfo{Name: p.Name, Price: p.Price, DurationDays: p.DurationDays})
	o.PlanInfo = string(info)
	superseded, err := s.createOrder(ctx, &o, prefix)
	if err != nil {
		return Placed{}, err
	}
	placed := Placed{Order: o, Superseded: superseded}
	s.closeSuperseded(ctx, superseded)
	if o.AmountCents == 0 {
		// Nothing to pay (a free plan, an upgrade to a cheaper one): active
		// at once, with no payment step.
		return s.activateFree(ctx, placed)
	}
	if payMethod != "" {
		pay, err := s.StartPay(ctx, who, &placed.Order, payMethod)
		if err != nil {
			return placed, err
		}
		placed.Pay = &pay
	}
	return placed, nil
}

// activateFree activates placed's order of amount 0 at once (status 1,
// pay_method free) through the one activation path.
func (s *Service) activateFree(ctx context.Context, placed Placed) (Placed, error) {
	_, _, err := s.activateOrder(ctx, placed.Order.ID, store.Activation{OrderID: placed.Order.ID,
		Method: payment.MethodFree, Now: s.now().Unix()})
	if err != nil {
		return placed, activationRefusal(err)
	}
	o, err := s.Store.OrderByID(ctx, placed.Order.ID)
	if err != nil {
		return placed, err
	}
	placed.Order = o
	return placed, nil
}

// CreateTopupOrder creates a pending top-up order (spec: Top-up order,
// rules 1–4) for the payer and starts its payment.
func (s *Service) CreateTopupOrder(ctx context.Context, who Payer, req order.TopupRequest) (Placed, error) {
	anyChannel, err := s.AnyChannelEnabled(ctx)
	if err != nil {
		return Placed{}, err
	}
	t, p := order.ResolveTopup(req, s.Topup(), anyChannel)
	if p != nil {
		return Placed{}, refuse(p.Format, p.Args...)
	}
	info, _ := json.Marshal(store.TopupInfo{Amount: order.CNY(t.AmountCents), BonusQuota: t.BonusQuota, ExchangeRate: t.ExchangeRate})
	o := store.Order{Type: order.TypeTopup, Source: order.SourceSelf, UserID: who.UserID, PlanInfo: string(info),
		AmountCents: t.AmountCents, BonusQuota: t.BonusQuota, PayMethod: req.PayMethod}
	if _, err := s.createOrder(ctx, &o, order.PrefixTopup); err != nil {
		return Placed{}, err
	}
	placed := Placed{Order: o}
	pay, err := s.StartPay(ctx, who, &placed.Order, req.PayMethod)
	if err != nil {
		return placed, err
	}
	placed.Pay = &pay
	return placed, nil
}

// createOrder stores o under a fresh number with prefix, within the
// user's pending-order limit, cancelling the pending upgrade it
// supersedes (answered); repeated collisions answer the spec's message.
func (s *Service) createOrder(ctx context.Context, o *store.Order, prefix string) ([]store.Order, error) {
	limit := 0
	if s.MaxPendingOrders != nil {
		limit = s.MaxPendingOrders()
	}
	o.CreateTime = s.now().Unix()
	superseded, err := s.Store.PlaceOrder(ctx, o, func() string { return order.NewOrderNo(prefix, s.now()) },
		store.OrderRules{MaxPending: limit, Supersede: true})
	switch {
	case errors.Is(err, store.ErrOrderNoExhausted):
		return nil, refuse(order.MsgOrderNoFailed)
	case errors.Is(err, store.ErrPendingLimit):
		return nil, refuse(MsgPendingLimit, limit)
	}
	return superseded, err
}

// StartPay produces the pay answer of pending order o with method and
// records the method (and the channel's pre-payment id) on the order. A
// channel that is off, without a provider, or whose pre-pay failed answers
// status warning: the order stays and can be paid later. An order that is
// no longer pending (paid or cancelled meanwhile) is refused with
// MsgOrderNotPending.
func (s *Service) StartPay(ctx context.Context, who Payer, o *store.Order, method string) (payment.Pay, error) {
	warn := func(format string) payment.Pay {
		return payment.Pay{Status: payment.PayWarning, Warning: msgtext.Render(who.Lang, format, method)}
	}
	pay := func() payment.Pay {
		c, err := s.ChannelSetting(ctx, method)
		if err != nil {
			s.log().Error("read payment channel", "method", method, "err", err)
			return warn(MsgPayPrepayFailed)
		}
		if !c.Enabled {
			return warn(MsgPayChannelOff)
		}
		if method == payment.MethodBank {
			var bank payment.BankConfig
			_ = json.Unmarshal(c.Config, &bank)
			return payment.Pay{Status: payment.PayReady, Note: payment.BankNote(who.Lang, bank, o.OrderNo)}
		}
		prov := s.Providers[method]
		if prov == nil {
			return warn(MsgPayNoProvider)
		}
		p, err := prov.Prepay(ctx, c.Config, payment.Prepay{OrderNo: o.OrderNo, AmountCents: o.AmountCents,
			Subject: orderSubject(o), ClientIP: who.ClientIP})
		if err != nil {
			s.log().Warn("payment prepay failed", "method", method, "order_no", o.OrderNo, "err", err)
			return warn(MsgPayPrepayFailed)
		}
		p.Status = payment.PayReady
		return p
	}()
	err := s.Store.SetOrderPayMethod(ctx, o.ID, o.UserID, method, pay.TradeNo)
	if errors.Is(err, store.ErrConflict) {
		return pay, refuse(MsgOrderNotPending)
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

// SelfOrder reads order id of user userID: another user's order is
// refused as if it did not exist.
func (s *Service) SelfOrder(ctx context.Context, userID, id int64) (store.Order, error) {
	o, err := s.Store.OrderByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && o.UserID != userID {
		return o, refuse(MsgOrderNotFound)
	}
	return o, err
}

// Order reads order id (admin routes).
func (s *Service) Order(ctx context.Context, id int64) (store.Order, error) {
	o, err := s.Store.OrderByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return o, refuse(MsgOrderNotFound)
	}
	return o, err
}

// PayAgain re-initiates payment of the payer's pending order id, with its
// method or the one sent.
func (s *Service) PayAgain(ctx context.Context, who Payer, id int64, method string) (Placed, error) {
	o, err := s.SelfOrder(ctx, who.UserID, id)
	if err != nil {
		return Placed{}, err
	}
	if o.Status != order.StatusPending {
		return Placed{}, refuse(MsgOrderNotPending)
	}
	if method == "" {
		method = o.PayMethod
	}
	if msg := SelfPayMethod(method); msg != "" {
		return Placed{}, refuse(msg)
	}
	pay, err := s.StartPay(ctx, who, &o, method)
	if err != nil {
		return Placed{}, err
	}
	return Placed{Order: o, Pay: &pay}, nil
}

// Cancel cancels the user's pending order id (0 → 2 only), closing its
// trade at the provider first. A trade the provider reports paid is
// applied instead, and the cancel refused as not pending; a provider that
// cannot be reached does not stop the cancel (a later payment is a
// payment exception, refunded).
func (s *Service) Cancel(ctx context.Context, userID, id int64) (store.Order, error) {
	if o, err := s.SelfOrder(ctx, userID, id); err != nil {
		return o, err
	} else if o.Status == order.StatusPending {
		if err := s.closeTrade(ctx, o); err != nil && !errors.Is(err, payment.ErrTradePaid) {
			s.log().Warn("close cancelled order's trade", "order_no", o.OrderNo, "err", err)
		}
	}
	o, err := s.Store.CancelOrder(ctx, id, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return o, refuse(MsgOrderNotFound)
	case errors.Is(err, store.ErrConflict):
		return o, refuse(MsgOrderNotPending)
	}
	return o, err
}
