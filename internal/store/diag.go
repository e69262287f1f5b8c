package store

import "context"

// UserBrief is what diagnostics show of a user (spec: User, UserBrief).
type UserBrief struct {
	ID          int64
	Username    string
	DisplayName string
	Email       string
	Role        int
	Status      int
}

// UserBriefs returns the users with ids (missing ones are absent), in one
// query.
func (s *Store) UserBriefs(ctx context.Context, ids []int64) (map[int64]UserBrief, error) {
	out := make(map[int64]UserBrief, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []User
	err := s.read(ctx).Select("id", "username", "display_name", "email", "role", "status").
		Where("id IN ?", ids).Find(&rows).Error
	for _, u := range rows {
		out[u.ID] = UserBrief{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName,
			Email: u.Email, Role: u.Role, Status: u.Status}
	}
	return out, wrap("get user briefs", err)
}

// OrderBrief is what diagnostics show of a subscription's source order.
type OrderBrief struct {
	ID      int64
	OrderNo string
	PlanID  int64
	Type    int
}

// OrdersByIDs returns the orders with ids (missing ones are absent), in
// one query.
func (s *Store) OrdersByIDs(ctx context.Context, ids []int64) (map[int64]OrderBrief, error) {
	out := map[int64]OrderBrief{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []Order
	if err := s.read(ctx).Select("id, order_no, plan_id, type").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, wrap("read orders", err)
	}
	for _, o := range rows {
		out[o.ID] = OrderBrief{ID: o.ID, OrderNo: o.OrderNo, PlanID: o.PlanID, Type: o.Type}
	}
	return out, nil
}

// FirstUserPlans returns the first limit subscriptions by id, as stored.
func (s *Store) FirstUserPlans(ctx context.Context, limit int) ([]UserPlan, error) {
	var rows []UserPlan
	err := s.read(ctx).Order("id").Limit(limit).Find(&rows).Error
	return rows, wrap("list first subscriptions", err)
}
