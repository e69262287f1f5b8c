package store

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/plan"
)

// CreatePlan inserts p, allocating its id and timestamps.
func (s *Store) CreatePlan(ctx context.Context, p *Plan) error {
	return s.write(ctx, "create plan", func(tx *Tx) error {
		return insertRow(tx, "plans", p, func(id, now int64) {
			p.ID, p.CreatedTime, p.UpdatedTime = id, now, now
		})
	})
}

// PlanByID returns the plan with id.
func (s *Store) PlanByID(ctx context.Context, id int64) (Plan, error) {
	var p Plan
	err := s.read(ctx).Where("id = ?", id).Take(&p).Error
	return p, wrap("get plan", err)
}

// ListPlans returns plans newest first and the total count. A non-empty
// keyword matches a substring of the name or the description.
func (s *Store) ListPlans(ctx context.Context, keyword string, p Page) ([]Plan, int64, error) {
	q := s.read(ctx).Model(&Plan{})
	if keyword != "" {
		q = whereLike(q, keyword, "name", "description")
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count plans", err)
	}
	var rows []Plan
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list plans", err)
}

// maxListedPlans bounds the users' listing, which is not paginated.
const maxListedPlans = 200

// ListedPlans returns the listed plans in the order users see them: by
// sort, then price, then id.
func (s *Store) ListedPlans(ctx context.Context) ([]Plan, error) {
	var rows []Plan
	err := s.read(ctx).Where("status = ?", plan.StatusListed).
		Order("sort, price, id").Limit(maxListedPlans).Find(&rows).Error
	return rows, wrap("list listed plans", err)
}

// UpdatePlan locks plan id, lets apply change it (apply validates the
// result and returns its refusal), writes it back and returns it. A plan
// is checked whole under the lock, so two concurrent partial updates
// cannot together break rule 3.
func (s *Store) UpdatePlan(ctx context.Context, id int64, apply func(p *Plan) error) (Plan, error) {
	var row Plan
	err := s.write(ctx, "update plan", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		if err := apply(&row); err != nil {
			return err
		}
		row.ID = id
		row.UpdatedTime = time.Now().Unix()
		if err := tx.db.Select("*").Omit("id", "created_time").Updates(&row).Error; err != nil {
			return err
		}
		return tx.changed("plans", "UPDATE", id)
	})
	return row, err
}

// DeletePlan removes plan id unless an active subscription (status 1, not
// past its end at now) uses it: then it returns ErrConflict and changes
// nothing. The plan row is locked first, and CreateUserPlan locks it too,
// so a subscription cannot be created for a plan being deleted.
func (s *Store) DeletePlan(ctx context.Context, id int64, now int64) error {
	return s.write(ctx, "delete plan", func(tx *Tx) error {
		var p Plan
		if err := tx.forUpdate().Where("id = ?", id).Take(&p).Error; err != nil {
			return err
		}
		var n int64
		err := tx.db.Model(&UserPlan{}).Where("plan_id = ? AND status = ? AND end_time > ?", id, plan.SubActive, now).
			Count(&n).Error
		if err != nil {
			return err
		}
		if n > 0 {
			return ErrConflict
		}
		if err := tx.db.Where("id = ?", id).Delete(&Plan{}).Error; err != nil {
			return err
		}
		return tx.changed("plans", "DELETE", id)
	})
}

// PlanNames returns the names of the plans with ids (missing ones are
// absent), in one query.
func (s *Store) PlanNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	names := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	var rows []Plan
	err := s.read(ctx).Select("id", "name").Where("id IN ?", ids).Find(&rows).Error
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	return names, wrap("get plan names", err)
}

// PlansByID returns the plans with ids (missing ones are absent), in one
// query.
func (s *Store) PlansByID(ctx context.Context, ids []int64) (map[int64]Plan, error) {
	plans := make(map[int64]Plan, len(ids))
	if len(ids) == 0 {
		return plans, nil
	}
	var rows []Plan
	err := s.read(ctx).Where("id IN ?", ids).Find(&rows).Error
	for _, r := range rows {
		plans[r.ID] = r
	}
	return plans, wrap("get plans", err)
}
