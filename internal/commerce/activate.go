package commerce

import (
	"context"
	"errors"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// MsgOrderStatusInvalid refuses an admin marking that is neither paid nor
// refunded.
const MsgOrderStatusInvalid = "status 只能是 1(已支付)或 3(已退款)"

// Activate applies a verified payment (a provider's notification): the
// order is found by number, the paid amount must equal the order's, and it
// activates exactly once (store.ActivateOrder). A repeat of a paid order
// with the same method is nil, so the provider hears success and stops
// retrying. Activator adapts it to payment.Activator.
func (s *Service) Activate(ctx context.Context, p payment.Paid) (OrderView, error) {
	a := store.Activation{OrderNo: p.OrderNo, Method: p.Method, TradeNo: p.TradeNo, AmountCents: p.AmountCents,
		CheckAmount: true, Now: s.now().Unix()}
	// In cluster mode the order is found here by number for its id, whose
	// owner activates it: an order not replicated here yet is unknown, and
	// the provider retries.
	var id int64
	if s.Owner != nil {
		o, err := s.Store.OrderByNo(ctx, p.OrderNo)
		if errors.Is(err, store.ErrNotFound) {
			return OrderView{}, payment.ErrUnknownOrder
		}
		if err != nil {
			return OrderView{}, err
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
	after, err := s.Activate(ctx, payment.Paid{Method: method, OrderNo: o.OrderNo, AmountCents: o.AmountCents,
		TradeNo: "TEST-" + o.OrderNo})
	return after, activationRefusal(err)
}

// activationRefusal is the caller's message of an activation refusal.
func activationRefusal(err error) error {
	var down OwnerDown
	switch {
	case errors.As(err, &down):
		return refuse(MsgOrderOwnerDown, down.Node)
	case errors.Is(err, payment.ErrUnknownOrder):
		return refuse(MsgOrderNotFound)
	case errors.Is(err, payment.ErrNotPending):
		return refuse(MsgOrderNotPending)
	case errors.Is(err, payment.ErrAmountMismatch):
		return refuse(MsgOrderAmountDiffer)
	}
	return err
}

// Marking is an admin's PUT /api/order/:id.
type Marking struct {
	Status    int
	PayMethod string
	TradeNo   string
}

// Mark is the admin marking (spec: PUT /api/order/:id): status 1 activates
// through store.ActivateOrder (a paid order stays as it is: a repeat
// credits nothing), status 3 refunds (a status flip only). It answers the
// order after.
func (s *Service) Mark(ctx context.Context, id int64, m Marking) (OrderView, error) {
	switch m.Status {
	case order.StatusPaid:
		o, err := s.Order(ctx, id)
		if err != nil {
			return OrderView{}, err
		}
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
}

// ActivateOwned runs, on the order's owner, the activation another node
// forwarded (POST /api/cluster/activate): refusals are outcomes of the
// answer, an error is a failure of the call.
func (s *Service) ActivateOwned(ctx context.Context, req OwnerActivateRequest) (OwnerActivateAnswer, error) {
	o, activated, err := s.Store.ActivateOrder(ctx, store.Activation{OrderID: req.OrderID, Method: req.Method,
		TradeNo: req.TradeNo, AmountCents: req.AmountCents, CheckAmount: req.CheckAmount, Now: s.now().Unix()})
	ans := OwnerActivateAnswer{Outcome: outcomeOK, Activated: activated, Order: View(&o)}
	switch {
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

// activateOutcomeError is the error of an owner's outcome; nil for ok.
func activateOutcomeError(outcome string) error {
	switch outcome {
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
// activated it; refusals are store.ActivateOrder's errors, an unreachable
// owner is OwnerDown.
func (s *Service) activateOrder(ctx context.Context, id int64, a store.Activation) (OrderView, bool, error) {
	if s.Owner.Local(id) {
		o, activated, err := s.Store.ActivateOrder(ctx, a)
		return View(&o), activated, err
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
	return ans.Order, ans.Activated, activateOutcomeError(ans.Outcome)
}
