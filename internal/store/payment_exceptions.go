package store

import (
	"context"
	"errors"

	"github.com/modelgate/modelgate/internal/order"
)

// PaymentException is a verified payment no order could take (migration
// 0028; issue 26, §3): at most one row per (PayMethod, TradeNo), so a
// payment reported many times (notification retries, the reconciler's
// query, several nodes) is recorded, and refunded, once. Status is one of
// the ExceptionStatus* values.
type PaymentException struct {
	ID            int64  `gorm:"primaryKey;autoIncrement:false"`
	OrderID       int64  `gorm:"not null;default:0;index"`
	OrderNo       string `gorm:"size:32;not null;default:''"`
	UserID        int64  `gorm:"not null;default:0"`
	AmountCents   int64  `gorm:"not null"`
	PayMethod     string `gorm:"size:16;not null;uniqueIndex:idx_payment_exceptions_trade,priority:1"`
	TradeNo       string `gorm:"size:128;not null;uniqueIndex:idx_payment_exceptions_trade,priority:2"`
	Reason        string `gorm:"size:32;not null"`
	Status        string `gorm:"size:16;not null;index"`
	Note          string `gorm:"type:text"`
	RefundNo      string `gorm:"size:64;not null;default:''"`
	RefundOutcome string `gorm:"size:255;not null;default:''"`
	RefundTime    int64  `gorm:"not null;default:0"`
	CreateTime    int64  `gorm:"not null;default:0"`
	UpdateTime    int64  `gorm:"not null;default:0"`
}

func (PaymentException) TableName() string { return "payment_exceptions" }

// Statuses of a payment exception.
const (
	// ExceptionOpen: recorded, not refunded (a channel without a provider
	// refund, bank, the test pay) or the refund is being asked for.
	ExceptionOpen = "open"
	// ExceptionRefunded: the provider accepted the refund.
	ExceptionRefunded = "refunded"
	// ExceptionRefundFailed: the provider refused or could not be reached;
	// RefundOutcome says why. A person decides (resolve with a note).
	ExceptionRefundFailed = "refund_failed"
	// ExceptionResolved: an admin marked it resolved with a note.
	ExceptionResolved = "resolved"
)

// RecordPaymentException stores e (ID, times filled in) unless a row of
// the same (PayMethod, TradeNo) exists: then e becomes that row and
// created is false. Of any number of concurrent calls for one payment
// exactly one answers created.
func (s *Store) RecordPaymentException(ctx context.Context, e *PaymentException, now int64) (created bool, err error) {
	row := *e
	err = s.write(ctx, "record payment exception", func(tx *Tx) error {
		row = *e
		return insertRow(tx, "payment_exceptions", &row, func(id, _ int64) {
			row.ID, row.CreateTime, row.UpdateTime = id, now, now
		})
	})
	if err == nil {
		*e = row
		return true, nil
	}
	if !errors.Is(err, ErrDuplicate) {
		return false, err
	}
	var old PaymentException
	if err := s.read(ctx).Where("pay_method = ? AND trade_no = ?", e.PayMethod, e.TradeNo).Take(&old).Error; err != nil {
		return false, wrap("read payment exception", err)
	}
	*e = old
	return false, nil
}

// PaymentExceptionByID reads exception id.
func (s *Store) PaymentExceptionByID(ctx context.Context, id int64) (PaymentException, error) {
	var e PaymentException
	err := s.read(ctx).Where("id = ?", id).Take(&e).Error
	return e, wrap("read payment exception", err)
}

// SetPaymentExceptionRefund records the outcome of exception id's refund:
// its status (ExceptionRefunded or ExceptionRefundFailed), the refund
// number asked for and the provider's answer. A resolved exception keeps
// its status.
func (s *Store) SetPaymentExceptionRefund(ctx context.Context, id int64, status, refundNo, outcome string, now int64) (PaymentException, error) {
	var e PaymentException
	err := s.write(ctx, "record exception refund", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&e).Error; err != nil {
			return err
		}
		if e.Status != ExceptionResolved {
			e.Status = status
		}
		e.RefundNo, e.RefundOutcome, e.UpdateTime = refundNo, outcome, now
		if status == ExceptionRefunded {
			e.RefundTime = now
		}
		if err := tx.db.Model(&PaymentException{}).Where("id = ?", id).Updates(map[string]any{
			"status": e.Status, "refund_no": e.RefundNo, "refund_outcome": e.RefundOutcome,
			"refund_time": e.RefundTime, "update_time": now,
		}).Error; err != nil {
			return err
		}
		return tx.changed("payment_exceptions", "UPDATE", id)
	})
	return e, err
}

// ResolvePaymentException marks exception id resolved with note (an
// admin's decision; a second call replaces the note).
func (s *Store) ResolvePaymentException(ctx context.Context, id int64, note string, now int64) (PaymentException, error) {
	var e PaymentException
	err := s.write(ctx, "resolve payment exception", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&e).Error; err != nil {
			return err
		}
		e.Status, e.Note, e.UpdateTime = ExceptionResolved, note, now
		if err := tx.db.Model(&PaymentException{}).Where("id = ?", id).Updates(map[string]any{
			"status": e.Status, "note": note, "update_time": now,
		}).Error; err != nil {
			return err
		}
		return tx.changed("payment_exceptions", "UPDATE", id)
	})
	return e, err
}

// ListPaymentExceptions lists the exceptions, newest first, of status
// when not empty.
func (s *Store) ListPaymentExceptions(ctx context.Context, status string, p Page) ([]PaymentException, int64, error) {
	q := s.read(ctx).Model(&PaymentException{})
	if status != "" {
		q = q.Where("status = ?", status)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count payment exceptions", err)
	}
	var rows []PaymentException
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list payment exceptions", err)
}

// PendingOrders lists up to limit pending orders created at or before
// createdBefore (0: any), oldest first, of the methods when given: the
// order sweeper's expired orders and the reconciler's wallet orders.
func (s *Store) PendingOrders(ctx context.Context, createdBefore int64, methods []string, limit int) ([]Order, error) {
	q := s.read(ctx).Where("status = ?", order.StatusPending)
	if createdBefore > 0 {
		q = q.Where("create_time <= ?", createdBefore)
	}
	if len(methods) > 0 {
		q = q.Where("pay_method IN ?", methods)
	}
	var rows []Order
	err := q.Order("id").Limit(limit).Find(&rows).Error
	return rows, wrap("list pending orders", err)
}

// ExpireOrder moves pending order id to cancelled (status 2) by a
// conditional update; false when it was no longer pending.
func (s *Store) ExpireOrder(ctx context.Context, id, now int64) (bool, error) {
	var changed bool
	err := s.write(ctx, "expire order", func(tx *Tx) error {
		changed = false
		res := tx.db.Model(&Order{}).Where("id = ? AND status = ?", id, order.StatusPending).
			Updates(map[string]any{"status": order.StatusCancelled, "update_time": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		changed = true
		return tx.changed("orders", "UPDATE", id)
	})
	return changed, err
}
