package store

import (
	"context"

	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/user"
)

// The admin dashboard's sums (spec: Admin dashboard). Counts are one
// aggregate query per table; consumption comes from the usage rollups
// (rollup.go), never from the logs, so no query here grows with the number
// of logs.

// Counts are the overview's record counts at a time now.
type Counts struct {
	UsersTotal, UsersEnabled, UsersDisabled, UsersDeleted int64
	UsersNewToday, UsersNew7d, UsersNew30d                int64
	TokensTotal, TokensEnabled                            int64
	ChannelsTotal, ChannelsEnabled                        int64
	PlansTotal, PlansEnabled                              int64
	RedemptionsTotal, RedemptionsUsed, RedemptionsUnused  int64
	SubsTotal, SubsActive, SubsExpired                    int64
}

// CountWindows are the starts of the new-user windows.
type CountWindows struct {
	Today, Week, Month int64
	Now                int64
}

// Redemption statuses (models.go, Redemption).
const (
	redemptionUnused = 1
	redemptionUsed   = 3
)

// sumIf is the SQL of a conditional count; COALESCE because SUM over no
// rows is NULL.
func sumIf(cond string) string { return "COALESCE(SUM(CASE WHEN " + cond + " THEN 1 ELSE 0 END), 0)" }

// DashboardCounts counts users, keys, channels, plans, redemption codes
// and subscriptions. A key is enabled when its status is 1 and its expiry
// has not passed (token.State.EffectiveStatus); a subscription is active
// or expired as read at now (plan.Status): active rows past their end
// count as expired.
func (s *Store) DashboardCounts(ctx context.Context, w CountWindows) (Counts, error) {
	var c Counts
	db := s.read(ctx)
	steps := []struct {
		table, sel string
		args       []any
		dst        []*int64
	}{
		{"users", "COUNT(*), " + sumIf("status = ?") + ", " + sumIf("status = ?") + ", " + sumIf("status = ?") + ", " +
			sumIf("created_at >= ?") + ", " + sumIf("created_at >= ?") + ", " + sumIf("created_at >= ?"),
			[]any{user.StatusEnabled, user.StatusDisabled, user.StatusDeleted, w.Today, w.Week, w.Month},
			[]*int64{&c.UsersTotal, &c.UsersEnabled, &c.UsersDisabled, &c.UsersDeleted, &c.UsersNewToday, &c.UsersNew7d, &c.UsersNew30d}},
		{"tokens", "COUNT(*), " + sumIf("status = 1 AND (expired_time = -1 OR expired_time >= ?)"),
			[]any{w.Now}, []*int64{&c.TokensTotal, &c.TokensEnabled}},
		{"channels", "COUNT(*), " + sumIf("status = 1"), nil, []*int64{&c.ChannelsTotal, &c.ChannelsEnabled}},
		{"plans", "COUNT(*), " + sumIf("status = ?"), []any{plan.StatusListed}, []*int64{&c.PlansTotal, &c.PlansEnabled}},
		{"redemptions", "COUNT(*), " + sumIf("status = ?") + ", " + sumIf("status = ?"),
			[]any{redemptionUsed, redemptionUnused}, []*int64{&c.RedemptionsTotal, &c.RedemptionsUsed, &c.RedemptionsUnused}},
		{"user_plans", "COUNT(*), " + sumIf("status = ? AND end_time > ?") + ", " + sumIf("status = ? OR (status = ? AND end_time <= ?)"),
			[]any{plan.SubActive, w.Now, plan.SubExpired, plan.SubActive, w.Now},
			[]*int64{&c.SubsTotal, &c.SubsActive, &c.SubsExpired}},
	}
	for _, st := range steps {
		dst := make([]any, len(st.dst))
		for i, p := range st.dst {
			dst[i] = p
		}
		if err := db.Raw("SELECT "+st.sel+" FROM "+st.table, st.args...).Row().Scan(dst...); err != nil {
			return c, wrap("count "+st.table, err)
		}
	}
	return c, nil
}

// QuotaWindows are the quota sums of consume logs since each start.
type QuotaWindows struct {
	Today, Week, Month, Total int64
}

// ConsumedQuota sums the quota of consume logs created since today, week
// and month (day starts, from the rollup by day and model) and in all.
func (s *Store) ConsumedQuota(ctx context.Context, today, week, month int64) (QuotaWindows, error) {
	var q QuotaWindows
	sum := func(cond string) string { return "COALESCE(SUM(CASE WHEN " + cond + " THEN quota ELSE 0 END), 0)" }
	err := s.read(ctx).Raw("SELECT "+sum("day_start >= ?")+", "+sum("day_start >= ?")+", "+sum("day_start >= ?")+
		", COALESCE(SUM(quota), 0) FROM usage_day_models", today, week, month).Row().
		Scan(&q.Today, &q.Week, &q.Month, &q.Total)
	return q, wrap("sum consumed quota", err)
}

// ActiveUsers counts the users with at least one consume log created
// since (a day start).
func (s *Store) ActiveUsers(ctx context.Context, since int64) (int64, error) {
	var n int64
	err := s.read(ctx).Raw("SELECT COUNT(DISTINCT user_id) FROM usage_day_users WHERE day_start >= ? AND request_count > 0", since).
		Row().Scan(&n)
	return n, wrap("count active users", err)
}

// Revenue is money received for orders, in fen.
type Revenue struct {
	Topup, Subscription, Refund int64
}

// Order types and statuses the revenue reads (spec: Order).
const (
	orderTypePlan  = 1
	orderTypeTopup = 2
	orderPaid      = 1
)

// OrderRevenue sums the money received (received_payments, which
// outlive the orders) whose pay_time is at or after since: kept payments
// by order type, and refunded ones. An order marked paid with pay_method
// free, or of amount 0, received nothing and is not there.
func (s *Store) OrderRevenue(ctx context.Context, since int64) (Revenue, error) {
	var rows []struct {
		OrderType int
		Refunded  bool
		Fen       int64
	}
	err := s.read(ctx).Raw("SELECT order_type, refund_time <> 0 AS refunded, COALESCE(SUM(amount_cents), 0) AS fen "+
		"FROM received_payments WHERE pay_time >= ? GROUP BY order_type, refund_time <> 0", since).
		Scan(&rows).Error
	var r Revenue
	for _, row := range rows {
		switch {
		case row.Refunded:
			r.Refund += row.Fen
		case row.OrderType == orderTypeTopup:
			r.Topup += row.Fen
		case row.OrderType == orderTypePlan:
			r.Subscription += row.Fen
		}
	}
	return r, wrap("sum revenue", err)
}

// Reconciliation compares, over all time, the money received and what it
// bought (received_payments, not refunded) with the paid orders (status
// 1, not pay_method free): amounts in fen, top-up credits in quota.
// Differences lists (up to MaxReconciliationDifferences) the orders where
// the two disagree: a payment whose order was deleted or is no longer
// paid, or a paid order without a received payment.
type Reconciliation struct {
	ReceivedCents, PaidOrdersCents int64
	ReceivedQuota, PaidOrdersQuota int64
	Differences                    []ReconciliationDifference
}

// ReconciliationDifference is one order where payments and orders differ.
type ReconciliationDifference struct {
	OrderID       int64
	OrderNo       string
	ReceivedCents int64
	// OrderCents and OrderStatus are the order's; -1 status when deleted.
	OrderCents  int64
	OrderStatus int
}

// MaxReconciliationDifferences bounds the listed differences.
const MaxReconciliationDifferences = 50

// Reconcile computes the Reconciliation.
func (s *Store) Reconcile(ctx context.Context) (Reconciliation, error) {
	var r Reconciliation
	db := s.read(ctx)
	err := db.Raw("SELECT COALESCE(SUM(amount_cents), 0), COALESCE(SUM(credit_quota), 0) FROM received_payments WHERE refund_time = 0").
		Row().Scan(&r.ReceivedCents, &r.ReceivedQuota)
	if err != nil {
		return r, wrap("reconcile: received", err)
	}
	err = db.Raw("SELECT COALESCE(SUM(amount_cents), 0), COALESCE(SUM(CASE WHEN type = ? THEN bonus_quota ELSE 0 END), 0) FROM orders "+
		"WHERE status = ? AND pay_method <> 'free' AND amount_cents > 0", orderTypeTopup, orderPaid).
		Row().Scan(&r.PaidOrdersCents, &r.PaidOrdersQuota)
	if err != nil {
		return r, wrap("reconcile: paid orders", err)
	}
	var diffs []struct {
		OrderID       int64
		OrderNo       string
		ReceivedCents int64
		OrderCents    *int64
		OrderStatus   *int
	}
	err = db.Raw("SELECT p.order_id, p.order_no, p.amount_cents AS received_cents, o.amount_cents AS order_cents, o.status AS order_status "+
		"FROM received_payments p LEFT JOIN orders o ON o.id = p.order_id "+
		"WHERE p.refund_time = 0 AND (o.id IS NULL OR o.status <> ? OR o.amount_cents <> p.amount_cents) "+
		"UNION ALL SELECT o.id, o.order_no, 0, o.amount_cents, o.status FROM orders o "+
		"WHERE o.status = ? AND o.pay_method <> 'free' AND o.amount_cents > 0 "+
		"AND NOT EXISTS (SELECT 1 FROM received_payments p WHERE p.order_id = o.id) "+
		"ORDER BY 1 LIMIT ?", orderPaid, orderPaid, MaxReconciliationDifferences).Scan(&diffs).Error
	if err != nil {
		return r, wrap("reconcile: differences", err)
	}
	for _, d := range diffs {
		x := ReconciliationDifference{OrderID: d.OrderID, OrderNo: d.OrderNo, ReceivedCents: d.ReceivedCents, OrderStatus: -1}
		if d.OrderCents != nil && d.OrderStatus != nil {
			x.OrderCents, x.OrderStatus = *d.OrderCents, *d.OrderStatus
		}
		r.Differences = append(r.Differences, x)
	}
	return r, nil
}

// UsageSince is the consumption per UTC day and model from the rollup,
// for days starting at or after since, ordered by day then model: the rows
// of UsageByDayModel over every user.
func (s *Store) UsageSince(ctx context.Context, since int64) ([]DayModelUsage, error) {
	var rows []DayModelUsage
	err := s.read(ctx).Model(&UsageDayModel{}).
		Select("day_start, model_name, request_count, quota, prompt_tokens, completion_tokens").
		Where("day_start >= ? AND request_count > 0", since).Order("day_start, model_name").Scan(&rows).Error
	return rows, wrap("usage by day and model", err)
}

// TopUser is a row of the top-users list: the user's consume logs since
// the window's start, their balance and their current plan's name.
type TopUser struct {
	ID           int64
	Username     string
	Email        string
	RequestCount int64
	Quota        int64
	Balance      int64
	PlanName     string `gorm:"-"`
}

// TopUsers lists up to limit users who are not deleted and have consume
// logs since (a day start; 0 = all), most requests in the window first,
// then most quota, then lowest id. PlanName is the plan of the user's
// earliest-ending active subscription at now, read for the whole list in
// one query.
func (s *Store) TopUsers(ctx context.Context, since int64, limit int, now int64) ([]TopUser, error) {
	var rows []TopUser
	err := s.read(ctx).Raw("SELECT u.id, u.username, u.email, u.quota AS balance, "+
		"SUM(r.request_count) AS request_count, SUM(r.quota) AS quota "+
		"FROM usage_day_users r JOIN users u ON u.id = r.user_id "+
		"WHERE r.day_start >= ? AND u.status <> ? "+
		"GROUP BY u.id, u.username, u.email, u.quota HAVING SUM(r.request_count) > 0 "+
		"ORDER BY SUM(r.request_count) DESC, SUM(r.quota) DESC, u.id LIMIT ?",
		since, user.StatusDeleted, limit).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return rows, wrap("top users", err)
	}
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	var plans []struct {
		UserID int64
		Name   string
	}
	// Earliest end first per user (then id), as the relay picks the
	// subscription that pays (ActiveUserPlans); the first row of each user
	// is theirs. A deleted plan leaves its name empty.
	err = s.read(ctx).Raw("SELECT up.user_id, COALESCE(p.name, '') AS name FROM user_plans up "+
		"LEFT JOIN plans p ON p.id = up.plan_id WHERE up.user_id IN ? AND up.status = ? AND up.end_time > ? "+
		"ORDER BY up.user_id, up.end_time, up.id", ids, plan.SubActive, now).Scan(&plans).Error
	if err != nil {
		return nil, wrap("current plans of top users", err)
	}
	names := map[int64]string{}
	for _, p := range plans {
		if _, ok := names[p.UserID]; !ok {
			names[p.UserID] = p.Name
		}
	}
	for i := range rows {
		rows[i].PlanName = names[rows[i].ID]
	}
	return rows, nil
}
