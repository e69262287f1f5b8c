package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/user"
)

// CreateRedemptions inserts rows in one transaction, allocating their ids in
// one step and setting CreatedTime: a batch is created whole or not at all.
func (s *Store) CreateRedemptions(ctx context.Context, rows []Redemption) error {
	return s.write(ctx, "create redemptions", func(tx *Tx) error {
		first, err := tx.allocIDs("redemptions", len(rows))
		if err != nil {
			return err
		}
		now := time.Now().Unix()
		for i := range rows {
			rows[i].ID = nthID(first, i)
			rows[i].CreatedTime = now
		}
		if err := tx.db.CreateInBatches(rows, 100).Error; err != nil {
			return err
		}
		for i := range rows {
			if err := tx.changed("redemptions", "INSERT", rows[i].ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// RedemptionByID returns the code with id.
func (s *Store) RedemptionByID(ctx context.Context, id int64) (Redemption, error) {
	var r Redemption
	err := s.read(ctx).Where("id = ?", id).Take(&r).Error
	return r, wrap("get redemption", err)
}

// RedemptionByCode returns the code whose key is code.
func (s *Store) RedemptionByCode(ctx context.Context, code string) (Redemption, error) {
	var r Redemption
	err := s.read(ctx).Where("code = ?", code).Take(&r).Error
	return r, wrap("get redemption", err)
}

// ListRedemptions returns codes newest first and the total count. A
// non-empty keyword matches the name or the code.
func (s *Store) ListRedemptions(ctx context.Context, keyword string, p Page) ([]Redemption, int64, error) {
	q := s.read(ctx).Model(&Redemption{})
	if keyword != "" {
		q = whereLike(q, keyword, "name", "code")
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count redemptions", err)
	}
	var rows []Redemption
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list redemptions", err)
}

// RedemptionPatch lists the fields an admin update may change; nil means
// unchanged.
type RedemptionPatch struct {
	Name   *string
	Quota  *int64
	Status *int
}

// UpdateRedemption applies p to code id and returns the row as it is after.
// A used code is final: a status change, or a quota different from the one
// it was redeemed for, changes nothing and returns ErrConflict together with
// the row as it is. The row is locked first, so the check cannot race a
// redemption.
func (s *Store) UpdateRedemption(ctx context.Context, id int64, p RedemptionPatch) (Redemption, error) {
	var row Redemption
	err := s.write(ctx, "update redemption", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		if row.Status == redemption.StatusUsed &&
			(p.Status != nil || (p.Quota != nil && *p.Quota != row.Quota)) {
			return ErrConflict
		}
		set := map[string]any{}
		if p.Name != nil {
			set["name"], row.Name = *p.Name, *p.Name
		}
		if p.Quota != nil {
			set["quota"], row.Quota = *p.Quota, *p.Quota
		}
		if p.Status != nil {
			set["status"], row.Status = *p.Status, *p.Status
		}
		if len(set) == 0 {
			return nil
		}
		// RowsAffected is not checked: the row is locked and exists, and
		// MySQL reports 0 for an update that sets the values it already has.
		if err := tx.db.Model(&Redemption{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		return tx.changed("redemptions", "UPDATE", id)
	})
	return row, err
}

// DeleteRedemption removes code id for good, used or not: the top-up log of
// a used code keeps its history.
func (s *Store) DeleteRedemption(ctx context.Context, id int64) error {
	return s.write(ctx, "delete redemption", func(tx *Tx) error {
		res := tx.db.Where("id = ?", id).Delete(&Redemption{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("redemptions", "DELETE", id)
	})
}

// Redeem credits the unused code to user userID in one transaction: it
// marks the code used by a conditional update, adds the code's quota to the
// balance and writes the log that logFor builds from the code. Of concurrent
// redemptions of one code exactly one matches the update; the others change
// nothing.
//
// An unknown code gives ErrNotFound; a code that is not unused gives
// ErrConflict together with the row, whose Status tells why.
func (s *Store) Redeem(ctx context.Context, code string, userID int64, logFor func(Redemption) Log) (Redemption, error) {
	var row Redemption
	err := s.write(ctx, "redeem code", func(tx *Tx) error {
		var err error
		row, err = tx.Redeem(code, userID, logFor)
		return err
	})
	return row, err
}

// Redeem is Store.Redeem inside a transaction.
func (tx *Tx) Redeem(code string, userID int64, logFor func(Redemption) Log) (Redemption, error) {
	var row Redemption
	res := tx.db.Exec("UPDATE redemptions SET status = ?, used_user_id = ?, redeemed_time = ? WHERE code = ? AND status = ?",
		redemption.StatusUsed, userID, time.Now().Unix(), code, redemption.StatusUnused)
	if res.Error != nil {
		return row, res.Error
	}
	// The row is read after the update: no RETURNING on MySQL, and the
	// update holds the row lock, so what is read is what was claimed.
	if err := tx.db.Where("code = ?", code).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return row, ErrNotFound
		}
		return row, err
	}
	if res.RowsAffected == 0 {
		return row, ErrConflict
	}
	if err := tx.mayRedeem(row, userID); err != nil {
		return row, err // rolled back: the code stays unused
	}
	if err := tx.AddUserQuota(userID, row.Quota); err != nil {
		if errors.Is(err, ErrNotFound) {
			// Not the caller's "unknown code": the user vanished.
			return row, fmt.Errorf("credit user %d: user does not exist", userID)
		}
		return row, err
	}
	if err := tx.InsertLogs([]Log{logFor(row)}); err != nil {
		return row, err
	}
	return row, tx.changed("redemptions", "UPDATE", row.ID)
}

// ErrCreditForbidden is a redemption its code's creator could not have
// credited to the redeemer directly: an admin redeeming its own code or
// another admin's (issue 26, §4).
var ErrCreditForbidden = errors.New("the code's creator may not credit this user")

// mayRedeem applies the admin top-up rule to redemption: the code's
// creator must be allowed to credit the redeemer (user.MayCredit). A code
// without a creator (0) or whose creator was deleted for good is
// redeemable by anyone.
func (tx *Tx) mayRedeem(code Redemption, userID int64) error {
	if code.CreatorID == 0 {
		return nil
	}
	var rows []User
	if err := tx.db.Select("id", "role").Where("id IN ?", []int64{code.CreatorID, userID}).Find(&rows).Error; err != nil {
		return err
	}
	var creator, redeemer *User
	for i := range rows {
		if rows[i].ID == code.CreatorID {
			creator = &rows[i]
		}
		if rows[i].ID == userID {
			redeemer = &rows[i]
		}
	}
	if creator == nil || redeemer == nil {
		return nil // a redeemer gone fails at the credit
	}
	if !user.MayCredit(creator.ID, creator.Role, redeemer.ID, redeemer.Role) {
		return ErrCreditForbidden
	}
	return nil
}

// CountUserLogs counts the logs of user userID with type typ. Tests use it
// to check that a credit wrote exactly one log.
func (s *Store) CountUserLogs(ctx context.Context, userID int64, typ int) (int64, error) {
	var n int64
	err := s.read(ctx).Model(&Log{}).Where("user_id = ? AND type = ?", userID, typ).Count(&n).Error
	return n, wrap("count user logs", err)
}
