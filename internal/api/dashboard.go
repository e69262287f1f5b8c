package api

import (
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/dashboard"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// The admin dashboard (spec: Admin dashboard; docs/decisions/commerce.md,
// Admin dashboard). Windows are whole UTC days (internal/dashboard).

// dashboardRange reads the range parameter.
func dashboardRange(r *http.Request) (string, error) {
	rng, msg := dashboard.ParseRange(r.URL.Query().Get("range"))
	if msg != "" {
		return "", httpx.Fail(msg)
	}
	return rng, nil
}

type overviewUsers struct {
	Total    int64 `json:"total"`
	Enabled  int64 `json:"enabled"`
	Disabled int64 `json:"disabled"`
	Deleted  int64 `json:"deleted"`
	NewToday int64 `json:"new_today"`
	New7d    int64 `json:"new_7d"`
	New30d   int64 `json:"new_30d"`
	Active7d int64 `json:"active_7d"`
}

type totalEnabled struct {
	Total   int64 `json:"total"`
	Enabled int64 `json:"enabled"`
}

type overviewRedemptions struct {
	Total  int64 `json:"total"`
	Used   int64 `json:"used"`
	Unused int64 `json:"unused"`
}

type overviewSubscriptions struct {
	Total   int64 `json:"total"`
	Active  int64 `json:"active"`
	Expired int64 `json:"expired"`
}

type overviewQuota struct {
	Today int64 `json:"today"`
	Week  int64 `json:"week"`
	Month int64 `json:"month"`
	Total int64 `json:"total"`
}

type overviewRevenue struct {
	Total        float64 `json:"total"`
	Topup        float64 `json:"topup"`
	Subscription float64 `json:"subscription"`
	Refund       float64 `json:"refund"`
}

// overviewReconciliation compares the money received and what it bought
// with the paid orders (docs/api.md, Admin dashboard): equal figures and
// no differences when every payment is an order that says so.
type overviewReconciliation struct {
	Received        float64                    `json:"received"`
	PaidOrders      float64                    `json:"paid_orders"`
	ReceivedQuota   int64                      `json:"received_quota"`
	PaidOrdersQuota int64                      `json:"paid_orders_quota"`
	Balanced        bool                       `json:"balanced"`
	Differences     []reconciliationDifference `json:"differences"`
}

type reconciliationDifference struct {
	OrderID     int64   `json:"order_id"`
	OrderNo     string  `json:"order_no"`
	Received    float64 `json:"received"`
	OrderAmount float64 `json:"order_amount"`
	// OrderStatus is -1 for an order deleted since.
	OrderStatus int `json:"order_status"`
}

type overviewView struct {
	Users         overviewUsers         `json:"users"`
	Tokens        totalEnabled          `json:"tokens"`
	Channels      totalEnabled          `json:"channels"`
	Plans         totalEnabled          `json:"plans"`
	Redemptions   overviewRedemptions   `json:"redemptions"`
	Subscriptions overviewSubscriptions `json:"subscriptions"`
	Quota         overviewQuota         `json:"quota"`
	Revenue       overviewRevenue       `json:"revenue"`
	// Reconciliation is over all time, whatever the range.
	Reconciliation overviewReconciliation `json:"reconciliation"`
	Range          string                 `json:"range"`
	GeneratedAt    int64                  `json:"generated_at"`
}

// dashboardOverview answers the counts, the consumed quota of today, the
// week and the month (the today, 7d and 30d windows) and in all, and the
// revenue of the range.
func (s *Server) dashboardOverview(w http.ResponseWriter, r *http.Request) error {
	rng, err := dashboardRange(r)
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	today, week, month := dashboard.Since(dashboard.RangeToday, now), dashboard.Since(dashboard.Range7d, now),
		dashboard.Since(dashboard.Range30d, now)
	ctx := r.Context()
	c, err := s.Store.DashboardCounts(ctx, store.CountWindows{Today: today, Week: week, Month: month, Now: now})
	if err != nil {
		return err
	}
	active, err := s.Store.ActiveUsers(ctx, week)
	if err != nil {
		return err
	}
	q, err := s.Store.ConsumedQuota(ctx, today, week, month)
	if err != nil {
		return err
	}
	rev, err := s.Store.OrderRevenue(ctx, dashboard.Since(rng, now))
	if err != nil {
		return err
	}
	rec, err := s.Store.Reconcile(ctx)
	if err != nil {
		return err
	}
	diffs := make([]reconciliationDifference, len(rec.Differences))
	for i, d := range rec.Differences {
		diffs[i] = reconciliationDifference{OrderID: d.OrderID, OrderNo: d.OrderNo, Received: dashboard.Yuan(d.ReceivedCents),
			OrderAmount: dashboard.Yuan(d.OrderCents), OrderStatus: d.OrderStatus}
	}
	return httpx.OK(w, overviewView{
		Users: overviewUsers{Total: c.UsersTotal, Enabled: c.UsersEnabled, Disabled: c.UsersDisabled,
			Deleted: c.UsersDeleted, NewToday: c.UsersNewToday, New7d: c.UsersNew7d, New30d: c.UsersNew30d,
			Active7d: active},
		Tokens:        totalEnabled{Total: c.TokensTotal, Enabled: c.TokensEnabled},
		Channels:      totalEnabled{Total: c.ChannelsTotal, Enabled: c.ChannelsEnabled},
		Plans:         totalEnabled{Total: c.PlansTotal, Enabled: c.PlansEnabled},
		Redemptions:   overviewRedemptions{Total: c.RedemptionsTotal, Used: c.RedemptionsUsed, Unused: c.RedemptionsUnused},
		Subscriptions: overviewSubscriptions{Total: c.SubsTotal, Active: c.SubsActive, Expired: c.SubsExpired},
		Quota:         overviewQuota{Today: q.Today, Week: q.Week, Month: q.Month, Total: q.Total},
		Revenue: overviewRevenue{Total: dashboard.Yuan(rev.Topup + rev.Subscription), Topup: dashboard.Yuan(rev.Topup),
			Subscription: dashboard.Yuan(rev.Subscription), Refund: dashboard.Yuan(rev.Refund)},
		Reconciliation: overviewReconciliation{Received: dashboard.Yuan(rec.ReceivedCents), PaidOrders: dashboard.Yuan(rec.PaidOrdersCents),
			ReceivedQuota: rec.ReceivedQuota, PaidOrdersQuota: rec.PaidOrdersQuota, Differences: diffs,
			Balanced: len(diffs) == 0 && rec.ReceivedCents == rec.PaidOrdersCents && rec.ReceivedQuota == rec.PaidOrdersQuota},
		Range:       rng,
		GeneratedAt: now,
	})
}

// dashboardCharts answers the consumption of every user per UTC day and
// model over the range (all: the last 30 days), shaped as the user
// dashboard.
func (s *Server) dashboardCharts(w http.ResponseWriter, r *http.Request) error {
	rng, err := dashboardRange(r)
	if err != nil {
		return err
	}
	rows, err := s.Store.UsageSince(r.Context(), dashboard.ChartSince(rng, time.Now().Unix()))
	if err != nil {
		return err
	}
	return httpx.OK(w, viewUsage(rows))
}

type topUserView struct {
	ID              int64  `json:"id"`
	Username        string `json:"username"`
	Email           string `json:"email"`
	RequestCount    int64  `json:"request_count"`
	Quota           int64  `json:"quota"`
	Balance         int64  `json:"balance"`
	CurrentPlanName string `json:"current_plan_name"`
}

type topUsersView struct {
	Range string        `json:"range"`
	Items []topUserView `json:"items"`
}

// dashboardTopUsers answers the users with the most consume logs in the
// range; request_count and quota are the window's.
func (s *Server) dashboardTopUsers(w http.ResponseWriter, r *http.Request) error {
	rng, err := dashboardRange(r)
	if err != nil {
		return err
	}
	limit, err := httpx.QueryInt(r, "limit", dashboard.DefaultLimit)
	if err != nil {
		return httpx.Fail(dashboard.MsgLimitInvalid)
	}
	if msg := dashboard.ValidLimit(limit); msg != "" {
		return httpx.Fail(msg)
	}
	now := time.Now().Unix()
	rows, err := s.Store.TopUsers(r.Context(), dashboard.Since(rng, now), int(limit), now)
	if err != nil {
		return err
	}
	items := make([]topUserView, len(rows))
	for i, u := range rows {
		items[i] = topUserView{ID: u.ID, Username: u.Username, Email: u.Email, RequestCount: u.RequestCount,
			Quota: u.Quota, Balance: u.Balance, CurrentPlanName: u.PlanName}
	}
	return httpx.OK(w, topUsersView{Range: rng, Items: items})
}
