package store

import (
	"context"
	"errors"
	"time"

	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/user"
)

// Refusals of CreateUserPlan.
var (
	ErrNoSuchPlan = errors.New("no such plan")
	ErrNoSuchUser = errors.New("no such user")
)

// CreateUserPlan gives user up.UserID a subscription to plan up.PlanID
// starting at now, for days days (≤ 0: the plan's duration). It sets the
// id, times and status (active). An unknown plan gives ErrNoSuchPlan; an
// unknown or deleted user ErrNoSuchUser. The plan row is locked, so the
// plan cannot be deleted meanwhile (DeletePlan).
func (s *Store) CreateUserPlan(ctx context.Context, up *UserPlan, days int, now int64) error {
	return s.write(ctx, "create subscription", func(tx *Tx) error {
		var p Plan
		if err := tx.forUpdate().Where("id = ?", up.PlanID).Take(&p).Error; err != nil {
			if errors.Is(wrap("", err), ErrNotFound) {
				return ErrNoSuchPlan
			}
			return err
		}
		var u User
		err := tx.db.Select("id", "status").Where("id = ?", up.UserID).Take(&u).Error
		switch {
		case errors.Is(wrap("", err), ErrNotFound) || err == nil && u.Status == user.StatusDeleted:
			return ErrNoSuchUser
		case err != nil:
			return err
		}
		if days <= 0 {
			days = p.DurationDays
		}
		up.StartTime, up.EndTime = now, now+int64(days)*86400
		up.Status = plan.SubActive
		return insertRow(tx, "user_plans", up, func(id, t int64) {
			up.ID, up.CreatedTime, up.UpdatedTime = id, t, t
		})
	})
}

// UserPlanByID returns the subscription with id.
func (s *Store) UserPlanByID(ctx context.Context, id int64) (UserPlan, error) {
	var up UserPlan
	err := s.read(ctx).Where("id = ?", id).Take(&up).Error
	return up, wrap("get subscription", err)
}

// MaxActiveUserPlans bounds ActiveUserPlans: far more subscriptions than a
// user holds at once.
const MaxActiveUserPlans = 100

// ActiveUserPlans returns user's subscriptions active at now (status 1,
// end after now), earliest end first, at most MaxActiveUserPlans.
func (s *Store) ActiveUserPlans(ctx context.Context, userID, now int64) ([]UserPlan, error) {
	var rows []UserPlan
	err := s.read(ctx).Where("user_id = ? AND status = ? AND end_time > ?", userID, plan.SubActive, now).
		Order("end_time, id").Limit(MaxActiveUserPlans).Find(&rows).Error
	return rows, wrap("list active subscriptions", err)
}

// UserPlanFilter narrows a subscription list; zero fields do not filter.
type UserPlanFilter struct {
	UserID int64
	// Status filters on the status as read at Now (plan.Status): 1 finds
	// active rows not past their end, 2 also active rows past it.
	Status int
	Now    int64
	// Keyword is a substring of the user's username or of the plan's name.
	Keyword string
}

// ListUserPlans returns subscriptions newest first and the total count.
func (s *Store) ListUserPlans(ctx context.Context, f UserPlanFilter, p Page) ([]UserPlan, int64, error) {
	q := s.read(ctx).Model(&UserPlan{})
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	switch f.Status {
	case 0:
	case plan.SubActive:
		q = q.Where("status = ? AND end_time > ?", plan.SubActive, f.Now)
	case plan.SubExpired:
		q = q.Where("(status = ? OR status = ? AND end_time <= ?)", plan.SubExpired, plan.SubActive, f.Now)
	default:
		q = q.Where("status = ?", f.Status)
	}
	if f.Keyword != "" {
		pat := likePattern(f.Keyword)
		q = q.Where("(user_id IN (SELECT id FROM users WHERE username LIKE ? ESCAPE '!')"+
			" OR plan_id IN (SELECT id FROM plans WHERE name LIKE ? ESCAPE '!'))", pat, pat)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count subscriptions", err)
	}
	var rows []UserPlan
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list subscriptions", err)
}

// UserPlanPatch lists what an admin update may change; nil is unchanged.
type UserPlanPatch struct {
	EndTime     *int64
	Status      *int
	Notes       *string
	BillingType *string
}

// UpdateUserPlan applies p to subscription id under a row lock and returns
// the row after. check gets the row as it would be written and may refuse
// it (an end before the start): then nothing changes.
func (s *Store) UpdateUserPlan(ctx context.Context, id int64, p UserPlanPatch, check func(UserPlan) error) (UserPlan, error) {
	var row UserPlan
	err := s.write(ctx, "update subscription", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		setIfSent(&row.EndTime, p.EndTime)
		setIfSent(&row.Status, p.Status)
		setIfSent(&row.Notes, p.Notes)
		setIfSent(&row.BillingType, p.BillingType)
		if err := check(row); err != nil {
			return err
		}
		row.UpdatedTime = time.Now().Unix()
		err := tx.db.Model(&UserPlan{}).Where("id = ?", id).Updates(map[string]any{
			"end_time": row.EndTime, "status": row.Status, "notes": row.Notes,
			"billing_type": row.BillingType, "updated_time": row.UpdatedTime,
		}).Error
		if err != nil {
			return err
		}
		return tx.changed("user_plans", "UPDATE", id)
	})
	return row, err
}

func setIfSent[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// DeleteUserPlan removes subscription id for good.
func (s *Store) DeleteUserPlan(ctx context.Context, id int64) error {
	return s.write(ctx, "delete subscription", func(tx *Tx) error {
		res := tx.db.Where("id = ?", id).Delete(&UserPlan{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("user_plans", "DELETE", id)
	})
}

// ExpireUserPlans writes status 2 on the active subscriptions whose end is
// at or before now, batch rows per transaction, and returns how many. Each
// row gets its change record. Reads do not wait for it: they apply
// plan.Status.
func (s *Store) ExpireUserPlans(ctx context.Context, now int64, batch int) (int64, error) {
	if batch <= 0 {
		batch = 500
	}
	var total int64
	for {
		var ids []int64
		err := s.read(ctx).Model(&UserPlan{}).Where("status = ? AND end_time <= ?", plan.SubActive, now).
			Order("end_time, id").Limit(batch).Pluck("id", &ids).Error
		if err != nil {
			return total, wrap("list ended subscriptions", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		var n int64
		err = s.write(ctx, "expire subscriptions", func(tx *Tx) error {
			// Read again under lock: an admin may have changed a row since.
			var locked []int64
			err := tx.forUpdate().Model(&UserPlan{}).
				Where("id IN ? AND status = ? AND end_time <= ?", ids, plan.SubActive, now).
				Pluck("id", &locked).Error
			if err != nil || len(locked) == 0 {
				return err
			}
			err = tx.db.Model(&UserPlan{}).Where("id IN ?", locked).
				Updates(map[string]any{"status": plan.SubExpired, "updated_time": time.Now().Unix()}).Error
			if err != nil {
				return err
			}
			for _, id := range locked {
				if err := tx.changed("user_plans", "UPDATE", id); err != nil {
					return err
				}
			}
			n = int64(len(locked)) // set, not added: a retried transaction runs again
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if len(ids) < batch {
			return total, nil
		}
	}
}
