package commerce

import (
	"context"
	"errors"
	"math"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Messages of activation refusals.
const (
	// MsgOrderStatusInvalid refuses an admin marking that is neither paid
	// nor refunded.
	MsgOrderStatusInvalid = "status 只能是 1(已支付)或 3(已退款)"
	MsgUpgradeInactive    = "升级订单不能激活:被替换的订阅已不再有效"
	// MsgUpgradeRepriced takes the price now and the order's amount (CNY).
	MsgUpgradeRepriced = "升级订单不能激活:按现在的剩余时间,升级价格为 %.2f 元,高于订单金额 %.2f 元"
)

// NotActivatable is a verified payment its order cannot take: an upgrade
// whose replaced subscription is no longer active (Reason
// store.UpgradeReplacedInactive) or that costs more now than the order's
// amount (store.UpgradeRepriced, PriceCents the price now). Nothing was
// credited and the order is unchanged; the money was received, so the
// caller records it (a payment exception, issue 26 §3).
type NotActivatable struct {
	Reason      string
	PriceCents  int64
	AmountCents int64
	Order       OrderView
}

func (e *NotActivatable) Error() string { return "order not activatable: " + e.Reason }

// notActivatable turns the store's upgrade refusal into NotActivatable.
func notActivatable(o OrderView, err error) error {
	var up *store.UpgradeRefusal
	if errors.As(err, &up) {
		return &NotActivatable{Reason: up.Reason, PriceCents: up.PriceCents, AmountCents: up.AmountCents, Order: o}
	}
	return err
}

// Activate applies a verified payment (a provider's notification): the
// order is found by number, the paid amount must equal the order's, and it
// activates exactly once (store.ActivateOrder). A repeat of a paid order
// with the same method is nil, so the provider hears success and stops
// retrying. A payment the order can no longer take (an upgrade checked
// again) is a *NotActivatable. Activator adapts it to payment.Activator.
func (s *Service) Activate(ctx context.Context, p payment.Paid) (OrderView, error) {
	o, activated, err := s.activatePaid(ctx, p)
	if err != nil {
		return o, err
	}
	if !activated && o.PayMethod != p.Method {
		return o, payment.ErrNotPending
	}
	return o, nil
}

// activatePaid is Activate answering whether this call activated the order.
func (s *Service) activatePaid(ctx context.Context, p payment.Paid) (OrderView, bool, error) {
	a := store.Activation{OrderNo: p.OrderNo, Method: p.Method, TradeNo: p.TradeNo, AmountCents: p.AmountCents,
		CheckAmount: true, Now: s.now().Unix()}
	// In cluster mode the order is found here by number for its id, whose
	// owner activates it: an order not replicated here yet is unknown, and
	// the provider retries.
	var id int64
	if s.Owner != nil {
		o, err := s.Store.OrderByNo(ctx, p.OrderNo)
		if errors.Is(err, store.ErrNotFound) {
			return OrderView{}, false, payment.ErrUnknownOrder
		}
		if err != nil {
			return OrderView{}, false, err
		}
		id = o.ID
	}
	return s.activateOrder(ctx, id, a)
}

// Activator is Activate as a payment.Activator.
func (s *Service) Activator() payment.Activator {
	return func(ctx context.Context, p payment.Paid) error {
		_, err := s.Activate(ctx, p)
		return err
	}
}

// TestPay is the admin test pay (Root): it pays pending order id through
// exactly the provider's path (Activate), with the order's own amount and
// method (bank when it has none).
func (s *Service) TestPay(ctx context.Context, id int64) (OrderView, error) {
	o, err := s.Order(ctx, id)
	if err != nil {
		return OrderView{}, err
	}
	method := o.PayMethod
	if method == "" {
		method = payment.MethodBank
	}
	a, err := s.ApplyPayment(ctx, payment.Paid{Method: method, OrderNo: o.OrderNo, AmountCents: o.AmountCents,
		TradeNo: testTradePrefix + o.OrderNo})
	if err == nil && a.Exception != nil {
		// Recorded as a provider's payment would be; the root hears why
		// the order did not take it.
		err = a.Refusal
	}
	return a.Order, activationRefusal(err)
}

// activationRefusal is the caller's message of an activation refusal.
func activationRefusal(err error) error {
	var down OwnerDown
	var na *NotActivatable
	switch {
	case errors.As(err, &down):
		return refuse(MsgOrderOwnerDown, down.Node)
	case errors.As(err, &na) && na.Reason == store.UpgradeRepriced:
		return refuse(MsgUpgradeRepriced, order.CNY(na.PriceCents), order.CNY(na.AmountCents))
	case errors.As(err, &na):
		return refuse(MsgUpgradeInactive)
	case errors.Is(err, payment.ErrUnknownOrder):
		return refuse(MsgOrderNotFound)
	case errors.Is(err, payment.ErrNotPending):
		return refuse(MsgOrderNotPending)
	case errors.Is(err, payment.ErrAmountMismatch):
		return refuse(MsgOrderAmountDiffer)
	}
	return err
}

// Actor is the admin who marks an order: the admin top-up rule
// (user.MayCredit) decides whose orders it may mark paid or refunded.
type Actor struct {
	ID   int64
	Role int
}

// MsgCannotCredit refuses a crediting action on a user the caller may not
// credit (an admin: itself, another admin, root).
const MsgCannotCredit = "无权管理同级或更高权限的用户"

// mayCredit checks that actor may credit the user of o.
func (s *Service) mayCredit(ctx context.Context, actor Actor, o store.Order) error {
	if actor.Role >= user.RoleRoot {
		return nil
	}
	u, err := s.Store.UserByID(ctx, o.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return refuse(MsgCannotCredit) // a user gone: only root acts on its orders
	}
	if err != nil {
		return err
	}
	if !user.MayCredit(actor.ID, actor.Role, u.ID, u.Role) {
		return refuse(MsgCannotCredit)
	}
	return nil
}

// Marking is an admin's PUT /api/order/:id.
type Marking struct {
	Status    int
	PayMethod string
	TradeNo   string
}

// Mark is the admin marking (spec: PUT /api/order/:id): status 1 activates
// through store.ActivateOrder (a paid order stays as it is: a repeat
// credits nothing), status 3 refunds (a status flip only). Either needs
// the actor to be allowed to credit the order's user. It answers the order
// after.
func (s *Service) Mark(ctx context.Context, actor Actor, id int64, m Marking) (OrderView, error) {
	if m.Status != order.StatusPaid && m.Status != order.StatusRefunded {
		return OrderView{}, refuse(MsgOrderStatusInvalid)
	}
	o, err := s.Order(ctx, id)
	if err != nil {
		return OrderView{}, err
	}
	if err := s.mayCredit(ctx, actor, o); err != nil {
		return OrderView{}, err
	}
	switch m.Status {
	case order.StatusPaid:
		method := m.PayMethod
		if method == "" {
			method = o.PayMethod
		}
		if method == "" {
			method = payment.MethodOffline
		}
		after, _, err := s.activateOrder(ctx, id, store.Activation{OrderID: id, Method: method,
			TradeNo: m.TradeNo, Now: s.now().Unix()})
		return after, activationRefusal(err)
	case order.StatusRefunded:
		o, err := s.Store.RefundOrder(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return OrderView{}, refuse(MsgOrderNotFound)
		}
		if err != nil {
			return OrderView{}, err
		}
		return View(&o), nil
	}
	return OrderView{}, refuse(MsgOrderStatusInvalid)
}

// Outcomes of an activation on the owner node, which the forwarding node
// turns back into the same errors.
const (
	outcomeOK           = "ok"
	outcomeUnknownOrder = "unknown_order"
	outcomeAmount       = "amount_mismatch"
	outcomeNotPending   = "not_pending"
	outcomeUpgrade      = "upgrade_refused"
)

// OwnerActivateRequest is the body of POST /api/cluster/activate: the
// activation of order order_id as the forwarding node's route asked it.
type OwnerActivateRequest struct {
	OrderID     int64  `json:"order_id"`
	Method      string `json:"method"`
	TradeNo     string `json:"trade_no"`
	AmountCents int64  `json:"amount_cents"`
	CheckAmount bool   `json:"check_amount"`
}

// OwnerActivateAnswer is the owner's answer: its refusals are outcomes.
type OwnerActivateAnswer struct {
	Outcome   string    `json:"outcome"`
	Activated bool      `json:"activated"`
	Order     OrderView `json:"order"`
	// Reason, PriceCents: an outcome upgrade_refused's (NotActivatable).
	Reason     string `json:"reason,omitempty"`
	PriceCents int64  `json:"price_cents,omitempty"`
}

// ActivateOwned runs, on the order's owner, the activation another node
// forwarded (POST /api/cluster/activate): refusals are outcomes of the
// answer, an error is a failure of the call.
func (s *Service) ActivateOwned(ctx context.Context, req OwnerActivateRequest) (OwnerActivateAnswer, error) {
	o, activated, err := s.Store.ActivateOrder(ctx, store.Activation{OrderID: req.OrderID, Method: req.Method,
		TradeNo: req.TradeNo, AmountCents: req.AmountCents, CheckAmount: req.CheckAmount, Now: s.now().Unix(),
		InviterReward: s.inviterReward()})
	ans := OwnerActivateAnswer{Outcome: outcomeOK, Activated: activated, Order: View(&o)}
	var up *store.UpgradeRefusal
	switch {
	case errors.As(err, &up):
		ans.Outcome, ans.Reason, ans.PriceCents = outcomeUpgrade, up.Reason, up.PriceCents
	case errors.Is(err, payment.ErrUnknownOrder):
		ans.Outcome = outcomeUnknownOrder
	case errors.Is(err, payment.ErrAmountMismatch):
		ans.Outcome = outcomeAmount
	case errors.Is(err, payment.ErrNotPending):
		ans.Outcome = outcomeNotPending
	case err != nil:
		return ans, err
	}
	return ans, nil
}

// activateOutcomeError is the error of an owner's answer; nil for ok.
func activateOutcomeError(ans OwnerActivateAnswer) error {
	switch ans.Outcome {
	case outcomeUpgrade:
		return &NotActivatable{Reason: ans.Reason, PriceCents: ans.PriceCents,
			AmountCents: int64(math.Round(ans.Order.Amount * 100)), Order: ans.Order}
	case outcomeOK:
		return nil
	case outcomeUnknownOrder:
		return payment.ErrUnknownOrder
	case outcomeAmount:
		return payment.ErrAmountMismatch
	case outcomeNotPending:
		return payment.ErrNotPending
	}
	return errors.New("owner answered an unknown outcome")
}

// activateOrder activates order id as a asks, on the order's owner: here
// when this node owns it (or cluster mode is off), else by forwarding. It
// answers the order as the owner has it after, and whether this call
// activated it; refusals are store.ActivateOrder's errors (an upgrade's a
// *NotActivatable), an unreachable owner is OwnerDown.
func (s *Service) activateOrder(ctx context.Context, id int64, a store.Activation) (OrderView, bool, error) {
	if s.Owner.Local(id) {
		a.InviterReward = s.inviterReward()
		o, activated, err := s.Store.ActivateOrder(ctx, a)
		v := View(&o)
		return v, activated, notActivatable(v, err)
	}
	req := OwnerActivateRequest{OrderID: id, Method: a.Method, TradeNo: a.TradeNo, AmountCents: a.AmountCents, CheckAmount: a.CheckAmount}
	var ans OwnerActivateAnswer
	err := s.Owner.Forward(ctx, id, owner.ActivatePath, req, &ans)
	if errors.Is(err, owner.ErrUnavailable) {
		s.log().Warn("order activation not forwarded: owner unavailable", "order_id", id, "err", err)
		return OrderView{}, false, OwnerDown{Node: cluster.Owner(id)}
	}
	if err != nil {
		return OrderView{}, false, err
	}
	return ans.Order, ans.Activated, activateOutcomeError(ans)
}
