package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/plan"
)

// ErrPendingLimit is PlaceOrder refusing an order: the user already has
// OrderRules.MaxPending pending orders.
var ErrPendingLimit = errors.New("too many pending orders")

// OrderRules are the checks PlaceOrder runs in the order's own
// transaction, with the user's row locked, so concurrent orders of one
// user cannot all pass them.
type OrderRules struct {
	// MaxPending > 0 refuses an order of a positive amount when the user
	// already has that many pending orders (top-up and plan together).
	MaxPending int
	// Supersede cancels (status 2) the user's pending upgrade orders that
	// replace the same subscription as o (o.ReplacesID ≠ 0): at most one
	// pending upgrade per subscription.
	Supersede bool
}

// PlaceOrder is CreateOrder under rules. It answers the orders it
// cancelled (a superseded upgrade), whose trade a caller may close at the
// provider; ErrPendingLimit when the limit refused o (nothing written).
func (s *Store) PlaceOrder(ctx context.Context, o *Order, newNo func() string, rules OrderRules) ([]Order, error) {
	var cancelled []Order
	for range orderNoAttempts {
		o.OrderNo = newNo()
		cancelled = nil
		err := s.write(ctx, "create order", func(tx *Tx) error {
			cancelled = nil
			// The user's row serializes the user's orders on PostgreSQL
			// and MySQL (SQLite has one writer).
			if err := tx.forUpdate().Select("id").Where("id = ?", o.UserID).Take(&User{}).Error; err != nil {
				return err
			}
			if rules.MaxPending > 0 && o.AmountCents > 0 {
				var n int64
				if err := tx.db.Model(&Order{}).Where("user_id = ? AND status = ?", o.UserID, order.StatusPending).
					Count(&n).Error; err != nil {
					return err
				}
				if n >= int64(rules.MaxPending) {
					return ErrPendingLimit
				}
			}
			if rules.Supersede && o.ReplacesID != 0 {
				if err := tx.db.Where("user_id = ? AND replaces_id = ? AND status = ? AND mode = ?",
					o.UserID, o.ReplacesID, order.StatusPending, order.ModePriceDiff).Order("id").Find(&cancelled).Error; err != nil {
					return err
				}
				now := time.Now().Unix()
				for i := range cancelled {
					c := &cancelled[i]
					if err := tx.db.Model(&Order{}).Where("id = ? AND status = ?", c.ID, order.StatusPending).
						Updates(map[string]any{"status": order.StatusCancelled, "update_time": now}).Error; err != nil {
						return err
					}
					c.Status, c.UpdateTime = order.StatusCancelled, now
					if err := tx.changed("orders", "UPDATE", c.ID); err != nil {
						return err
					}
				}
			}
			return insertRow(tx, "orders", o, func(id, now int64) {
				if o.CreateTime != 0 {
					now = o.CreateTime // the caller's clock (expiry counts from it)
				}
				o.ID, o.CreateTime, o.UpdateTime = id, now, now
			})
		})
		if errors.Is(err, ErrPendingLimit) {
			return nil, ErrPendingLimit
		}
		if !errors.Is(err, ErrDuplicate) {
			return cancelled, err
		}
	}
	return nil, ErrOrderNoExhausted
}

// PaidForSubscription is the amount actually paid for subscription sub:
// its order's amount when that order is paid (status 1) with money (not
// pay_method free); 0 for a subscription without an order (an admin's
// grant), whose order was refunded, deleted or marked free.
func (s *Store) PaidForSubscription(ctx context.Context, sub UserPlan) (int64, error) {
	var paid int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		paid, err = tx.paidFor(sub)
		return err
	})
	return paid, wrap("amount paid for subscription", err)
}

func (tx *Tx) paidFor(sub UserPlan) (int64, error) {
	if sub.OrderID == 0 {
		return 0, nil
	}
	var o Order
	err := tx.db.Select("id", "status", "pay_method", "amount_cents").Where("id = ?", sub.OrderID).Take(&o).Error
	if errors.Is(wrap("", err), ErrNotFound) {
		// Deleted by root: the received payment it carried still counts.
		return tx.receivedFor(sub.OrderID)
	}
	if err != nil {
		return 0, err
	}
	if o.Status != order.StatusPaid || o.PayMethod == payment.MethodFree {
		return 0, nil
	}
	return o.AmountCents, nil
}

// UpgradeRefusal is an upgrade order that can no longer be activated as
// one (issue 26, §1): the subscription it replaces is no longer active
// (Reason UpgradeReplacedInactive), or the upgrade priced now costs more
// than the order's amount (UpgradeRepriced, PriceCents the price now).
// ActivateOrder answers it and changes nothing.
type UpgradeRefusal struct {
	Reason      string
	PriceCents  int64
	AmountCents int64
}

// Reasons of an UpgradeRefusal.
const (
	UpgradeReplacedInactive = "replaced_inactive"
	UpgradeRepriced         = "repriced"
)

func (e *UpgradeRefusal) Error() string { return "upgrade order not activatable: " + e.Reason }

// checkUpgrade checks, in the activation's transaction, that upgrade order
// o still buys what it was priced for: the replaced subscription (locked)
// is active, and the upgrade priced now (the plan as sold less the unused
// share of what was paid for it) is within the tolerance of o's amount.
// It then ends the replaced subscription.
func (tx *Tx) checkUpgrade(o Order, now int64) error {
	var sub UserPlan
	err := tx.forUpdate().Where("id = ? AND user_id = ?", o.ReplacesID, o.UserID).Take(&sub).Error
	if errors.Is(wrap("", err), ErrNotFound) || err == nil && (sub.Status != plan.SubActive || sub.EndTime <= now) {
		return &UpgradeRefusal{Reason: UpgradeReplacedInactive, AmountCents: o.AmountCents}
	}
	if err != nil {
		return err
	}
	var info PlanInfo
	_ = json.Unmarshal([]byte(o.PlanInfo), &info)
	price, err := order.Cents(info.Price)
	if err != nil {
		price = o.AmountCents // written by this code from a checked price: never happens
	}
	paid, err := tx.paidFor(sub)
	if err != nil {
		return err
	}
	now64 := order.UpgradeCents(price, paid, sub.EndTime-now, sub.EndTime-sub.StartTime)
	if !order.UpgradeStillCovered(now64, o.AmountCents) {
		return &UpgradeRefusal{Reason: UpgradeRepriced, PriceCents: now64, AmountCents: o.AmountCents}
	}
	res := tx.db.Model(&UserPlan{}).Where("id = ? AND status = ? AND end_time > ?", sub.ID, plan.SubActive, now).
		Updates(map[string]any{"end_time": now, "status": plan.SubExpired, "updated_time": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return &UpgradeRefusal{Reason: UpgradeReplacedInactive, AmountCents: o.AmountCents}
	}
	return tx.changed("user_plans", "UPDATE", sub.ID)
}

// receivedFor is the amount received for order id by its received
// payment (0 when none, or refunded).
func (tx *Tx) receivedFor(orderID int64) (int64, error) {
	var p ReceivedPayment
	err := tx.db.Where("order_id = ?", orderID).Take(&p).Error
	if errors.Is(wrap("", err), ErrNotFound) {
		return 0, nil
	}
	if err != nil || p.RefundTime != 0 {
		return 0, err
	}
	return p.AmountCents, nil
}

// recordReceived writes the received payment of order o, just activated
// with money, in the activation's transaction.
func (tx *Tx) recordReceived(o Order) error {
	if o.AmountCents <= 0 || o.PayMethod == payment.MethodFree {
		return nil
	}
	p := ReceivedPayment{OrderID: o.ID, OrderNo: o.OrderNo, UserID: o.UserID, OrderType: o.Type,
		AmountCents: o.AmountCents, PayMethod: o.PayMethod, TradeNo: o.PayTradeNo, PayTime: o.PayTime}
	if o.Type == order.TypeTopup {
		p.CreditQuota = o.BonusQuota
	}
	if err := tx.db.Create(&p).Error; err != nil {
		return err
	}
	return tx.changed("received_payments", "INSERT", o.ID)
}
