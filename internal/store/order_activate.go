package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/plan"
)

// Activation is a payment to apply to an order: by a provider's verified
// notification (CheckAmount: the paid amount must equal the order's), by
// an admin marking it paid, or by the admin test pay.
type Activation struct {
	OrderNo string
	// OrderID finds the order by id when OrderNo is empty (admin routes).
	OrderID     int64
	Method      string
	TradeNo     string
	AmountCents int64
	CheckAmount bool
	Now         int64
	// InviterReward is option QuotaForInviter: what the first paid order
	// of an invited user credits its inviter (RewardInviter).
	InviterReward int64
}

// PlanInfo is a plan order's plan_info: the plan as it was bought, so an
// activation does not depend on later changes to the plan.
type PlanInfo struct {
	Name         string  `json:"name"`
	Price        float64 `json:"price"`
	DurationDays int     `json:"duration_days"`
}

// TopupInfo is a top-up order's plan_info (spec: amount, bonus_quota and
// exchange_rate).
type TopupInfo struct {
	Amount       float64 `json:"amount"`
	BonusQuota   int64   `json:"bonus_quota"`
	ExchangeRate int64   `json:"exchange_rate"`
}

// ActivateOrder is the one activation path of orders (docs/decisions/
// commerce.md, Orders and top-up): in one transaction a conditional update
// moves the order from pending to paid, and only when it changed the row
// does the same transaction credit the top-up's bonus_quota (with its
// type-1 log) or start the plan's subscription (ending the replaced one
// for an upgrade). Of any number of concurrent or repeated activations
// exactly one credits.
//
// It answers the order after, and whether this call activated it. An
// order already paid gives (order, false, nil) and changes nothing; an
// unknown order payment.ErrUnknownOrder; a different amount under
// CheckAmount payment.ErrAmountMismatch; a cancelled or refunded order
// payment.ErrNotPending; an upgrade that no longer pays for itself an
// *UpgradeRefusal (rolled back: nothing changed).
func (s *Store) ActivateOrder(ctx context.Context, a Activation) (Order, bool, error) {
	var o Order
	var activated bool
	err := s.InTx(ctx, func(tx *Tx) error {
		activated = false
		// The update comes first: it takes the row lock, so the read after
		// it sees the latest committed row on every engine (MySQL's
		// snapshot starts after the lock wait).
		q := tx.db.Model(&Order{}).Where("status = ?", order.StatusPending)
		if a.OrderNo != "" {
			q = q.Where("order_no = ?", a.OrderNo)
		} else {
			q = q.Where("id = ?", a.OrderID)
		}
		if a.CheckAmount {
			q = q.Where("amount_cents = ?", a.AmountCents)
		}
		res := q.Updates(map[string]any{
			"status": order.StatusPaid, "pay_status": order.PayPaid, "pay_time": a.Now,
			"pay_method": a.Method, "pay_trade_no": a.TradeNo, "update_time": a.Now,
		})
		if res.Error != nil {
			return res.Error
		}
		read := tx.forUpdate()
		if a.OrderNo != "" {
			read = read.Where("order_no = ?", a.OrderNo)
		} else {
			read = read.Where("id = ?", a.OrderID)
		}
		if err := read.Take(&o).Error; err != nil {
			if errors.Is(wrap("", err), ErrNotFound) {
				return payment.ErrUnknownOrder
			}
			return err
		}
		if res.RowsAffected == 0 {
			switch {
			case a.CheckAmount && o.AmountCents != a.AmountCents:
				return payment.ErrAmountMismatch
			case o.Status == order.StatusPaid:
				return nil
			default:
				return payment.ErrNotPending
			}
		}
		if err := tx.changed("orders", "UPDATE", o.ID); err != nil {
			return err
		}
		activated = true
		if err := tx.recordReceived(o); err != nil {
			return err
		}
		// The invitee's first paid order rewards the inviter, once, in
		// this transaction (issue 31 §4; a free order pays nothing).
		if o.AmountCents > 0 {
			if err := tx.RewardInviter(o.UserID, a.InviterReward); err != nil {
				return err
			}
		}
		if o.Type == order.TypeTopup {
			return tx.creditTopup(o)
		}
		if o.ReplacesID != 0 {
			// An upgrade is checked again now (issue 26, §1).
			if err := tx.checkUpgrade(o, a.Now); err != nil {
				return err
			}
		}
		return tx.activatePlan(o, a.Now)
	})
	var upgrade *UpgradeRefusal
	if errors.As(err, &upgrade) {
		// Rolled back: the order is as it was before this call.
		if before, rerr := s.OrderByID(ctx, o.ID); rerr == nil {
			o = before
		}
		return o, false, err
	}
	if errors.Is(err, payment.ErrUnknownOrder) || errors.Is(err, payment.ErrAmountMismatch) || errors.Is(err, payment.ErrNotPending) {
		return o, false, err
	}
	return o, activated, wrap("activate order", err)
}

// creditTopup adds the top-up's bonus_quota to the balance (a counter
// change, so the billing ledger re-reads the balance) and writes the
// type-1 log, in the activation's transaction.
func (tx *Tx) creditTopup(o Order) error {
	var u User
	if err := tx.db.Select("id", "username", "user_group").Where("id = ?", o.UserID).Take(&u).Error; err != nil {
		return fmt.Errorf("credit order %s: user %d: %w", o.OrderNo, o.UserID, err)
	}
	if o.BonusQuota > 0 {
		if err := tx.AddUserQuota(o.UserID, o.BonusQuota); err != nil {
			return fmt.Errorf("credit order %s: %w", o.OrderNo, err)
		}
	}
	content := fmt.Sprintf(logtext.OrderTopup, order.CNY(o.AmountCents), o.OrderNo, o.PayMethod, o.BonusQuota)
	return tx.InsertLogs([]Log{{UserID: u.ID, Username: u.Username, Group: u.Group, Type: LogTopup, Quota: o.BonusQuota, Content: content}})
}

// activatePlan starts the plan order's subscription (order_id = the
// order) for the plan's duration as bought (plan_info); an upgrade's
// replaced subscription was ended by checkUpgrade.
func (tx *Tx) activatePlan(o Order, now int64) error {
	var info PlanInfo
	_ = json.Unmarshal([]byte(o.PlanInfo), &info) // written by this code; a bad one falls back below
	days := info.DurationDays
	if days <= 0 {
		var p Plan
		if err := tx.db.Select("id", "duration_days").Where("id = ?", o.PlanID).Take(&p).Error; err == nil {
			days = p.DurationDays
		}
	}
	if days <= 0 {
		days = 30
	}
	up := UserPlan{UserID: o.UserID, PlanID: o.PlanID, OrderID: o.ID, StartTime: now, EndTime: now + int64(days)*86400,
		Status: plan.SubActive, BillingType: "token", Notes: "订单 " + o.OrderNo}
	return insertRow(tx, "user_plans", &up, func(id, t int64) {
		up.ID, up.CreatedTime, up.UpdatedTime = id, t, t
	})
}
