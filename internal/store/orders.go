package store

import (
	"context"
	"errors"
	"time"

	"github.com/modelgate/modelgate/internal/order"
)

// ErrOrderNoExhausted is CreateOrder giving up after orderNoAttempts
// order numbers that were all taken.
var ErrOrderNoExhausted = errors.New("no free order number")

const orderNoAttempts = 5

// CreateOrder inserts o (pending) under a fresh order number from newNo,
// setting its id and times. An order number already taken is retried with
// another one, each attempt in a transaction of its own (PostgreSQL aborts
// a transaction at a failed insert); after orderNoAttempts collisions it
// gives ErrOrderNoExhausted and nothing is written.
func (s *Store) CreateOrder(ctx context.Context, o *Order, newNo func() string) error {
	for range orderNoAttempts {
		o.OrderNo = newNo()
		err := s.write(ctx, "create order", func(tx *Tx) error {
			return insertRow(tx, "orders", o, func(id, now int64) {
				o.ID, o.CreateTime, o.UpdateTime = id, now, now
			})
		})
		if !errors.Is(err, ErrDuplicate) {
			return err
		}
	}
	return ErrOrderNoExhausted
}

// OrderByID returns the order with id.
func (s *Store) OrderByID(ctx context.Context, id int64) (Order, error) {
	var o Order
	err := s.read(ctx).Where("id = ?", id).Take(&o).Error
	return o, wrap("get order", err)
}

// OrderByNo returns the order with order number no.
func (s *Store) OrderByNo(ctx context.Context, no string) (Order, error) {
	var o Order
	err := s.read(ctx).Where("order_no = ?", no).Take(&o).Error
	return o, wrap("get order", err)
}

// OrderFilter narrows an order list; zero fields do not filter, except
// Status, which filters when non-nil (0 is pending).
type OrderFilter struct {
	UserID int64
	Type   int
	Status *int
	Source int
	PlanID int64
	// Keyword is a substring of the order number or of the user's username.
	Keyword string
}

// ListOrders returns orders newest first and the total count.
func (s *Store) ListOrders(ctx context.Context, f OrderFilter, p Page) ([]Order, int64, error) {
	q := s.read(ctx).Model(&Order{})
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if f.Type != 0 {
		q = q.Where("type = ?", f.Type)
	}
	if f.Status != nil {
		q = q.Where("status = ?", *f.Status)
	}
	if f.Source != 0 {
		q = q.Where("source = ?", f.Source)
	}
	if f.PlanID != 0 {
		q = q.Where("plan_id = ?", f.PlanID)
	}
	if f.Keyword != "" {
		pat := likePattern(f.Keyword)
		q = q.Where("(order_no LIKE ? ESCAPE '!' OR user_id IN (SELECT id FROM users WHERE username LIKE ? ESCAPE '!'))", pat, pat)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count orders", err)
	}
	var rows []Order
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list orders", err)
}

// CancelOrder moves order id of user userID from pending to cancelled by a
// conditional update. An order that is not the user's (or does not exist)
// gives ErrNotFound; one that is not pending ErrConflict.
func (s *Store) CancelOrder(ctx context.Context, id, userID int64) (Order, error) {
	var o Order
	err := s.write(ctx, "cancel order", func(tx *Tx) error {
		res := tx.db.Model(&Order{}).Where("id = ? AND user_id = ? AND status = ?", id, userID, order.StatusPending).
			Updates(map[string]any{"status": order.StatusCancelled, "update_time": time.Now().Unix()})
		if res.Error != nil {
			return res.Error
		}
		if err := tx.forUpdate().Where("id = ? AND user_id = ?", id, userID).Take(&o).Error; err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return ErrConflict
		}
		return tx.changed("orders", "UPDATE", id)
	})
	return o, err
}

// SetOrderPayMethod records the pay method and the channel's pre-payment id
// of pending order id of user userID (re-initiated payment). An order that
// is no longer pending gives ErrConflict; one that is not the user's
// ErrNotFound.
func (s *Store) SetOrderPayMethod(ctx context.Context, id, userID int64, method, prepayID string) error {
	return s.write(ctx, "set order pay method", func(tx *Tx) error {
		res := tx.db.Model(&Order{}).Where("id = ? AND user_id = ? AND status = ?", id, userID, order.StatusPending).
			Updates(map[string]any{"pay_method": method, "prepay_id": prepayID, "update_time": time.Now().Unix()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			// MySQL counts a row whose values did not change as unaffected:
			// read the status rather than trust the count.
			var o Order
			if err := tx.forUpdate().Select("id", "status").Where("id = ? AND user_id = ?", id, userID).Take(&o).Error; err != nil {
				return err
			}
			if o.Status != order.StatusPending {
				return ErrConflict
			}
		}
		return tx.changed("orders", "UPDATE", id)
	})
}

// RefundOrder marks order id refunded (spec: any status → 3, pay_status
// −1). It is a status flip only: the credited quota and the subscription
// stay (spec, Versioning: refunds do not reverse quota). pay_time is kept,
// so the dashboard places the refund at the payment it reverses. A
// refunded order is never activated afterwards (ActivateOrder needs
// pending).
func (s *Store) RefundOrder(ctx context.Context, id int64) (Order, error) {
	var o Order
	err := s.write(ctx, "refund order", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&o).Error; err != nil {
			return err
		}
		if o.Status == order.StatusRefunded {
			return nil
		}
		o.Status, o.PayStatus, o.UpdateTime = order.StatusRefunded, order.PayRefunded, time.Now().Unix()
		err := tx.db.Model(&Order{}).Where("id = ?", id).Updates(map[string]any{
			"status": o.Status, "pay_status": o.PayStatus, "update_time": o.UpdateTime,
		}).Error
		if err != nil {
			return err
		}
		if err := tx.changed("orders", "UPDATE", id); err != nil {
			return err
		}
		res := tx.db.Model(&ReceivedPayment{}).Where("order_id = ? AND refund_time = 0", id).Update("refund_time", o.UpdateTime)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return tx.changed("received_payments", "UPDATE", id)
	})
	return o, err
}

// DeleteOrder removes order id for good. What it activated stays, and so
// does its received payment (revenue).
func (s *Store) DeleteOrder(ctx context.Context, id int64) error {
	return s.write(ctx, "delete order", func(tx *Tx) error {
		res := tx.db.Where("id = ?", id).Delete(&Order{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("orders", "DELETE", id)
	})
}
