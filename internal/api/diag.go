package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// diagRows is how many subscriptions the diagnostics scan (spec: Limits).
const diagRows = 100

// userPlanRow is a subscription row exactly as stored: the status is not
// corrected for a passed end, so the diagnostics show what the database
// holds.
type userPlanRow struct {
	ID          int64  `json:"id"`
	UserID      int64  `json:"user_id"`
	PlanID      int64  `json:"plan_id"`
	OrderID     int64  `json:"order_id"`
	StartTime   int64  `json:"start_time"`
	EndTime     int64  `json:"end_time"`
	Status      int    `json:"status"`
	BillingType string `json:"billing_type"`
	Notes       string `json:"notes"`
	CreatedTime int64  `json:"created_time"`
	UpdatedTime int64  `json:"updated_time"`
}

// rawUserPlan is row as stored: the spec's subscription fields and the
// notes, the status not corrected for the time.
func rawUserPlan(row store.UserPlan) userPlanRow {
	return userPlanRow{
		ID: row.ID, UserID: row.UserID, PlanID: row.PlanID, OrderID: row.OrderID,
		StartTime: row.StartTime, EndTime: row.EndTime, Status: row.Status, BillingType: row.BillingType,
		Notes: row.Notes, CreatedTime: row.CreatedTime, UpdatedTime: row.UpdatedTime,
	}
}

type userBriefView struct {
	ID          int64  `json:"id"`
	Username    string `json:"username"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
	Role        int    `json:"role"`
	Status      int    `json:"status"`
}

type diagSubscriptionRow struct {
	UserPlan    userPlanRow    `json:"user_plan"`
	OrderNo     string         `json:"order_no"`
	OrderPlanID int64          `json:"order_plan_id"`
	OrderType   int            `json:"order_type"`
	User        *userBriefView `json:"user"` // null: no such user
}

type diagSubscriptions struct {
	TotalUserPlans int                   `json:"total_user_plans"`
	MissingPlanID  int                   `json:"missing_plan_id"`
	Rows           []diagSubscriptionRow `json:"rows"`
}

// diagSubscriptions shows the first subscriptions by id with their source
// order and user, in three queries whatever the number of rows.
func (s *Server) diagSubscriptions(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rows, err := s.Store.FirstUserPlans(ctx, diagRows)
	if err != nil {
		return err
	}
	var userIDs, orderIDs []int64
	for _, row := range rows {
		userIDs = append(userIDs, row.UserID)
		if row.OrderID > 0 {
			orderIDs = append(orderIDs, row.OrderID)
		}
	}
	users, err := s.Store.UserBriefs(ctx, userIDs)
	if err != nil {
		return err
	}
	orders, err := s.Store.OrdersByIDs(ctx, orderIDs)
	if err != nil {
		return err
	}
	out := diagSubscriptions{TotalUserPlans: len(rows), Rows: make([]diagSubscriptionRow, len(rows))}
	for i, row := range rows {
		if row.PlanID <= 0 {
			out.MissingPlanID++
		}
		d := diagSubscriptionRow{UserPlan: rawUserPlan(row)}
		if o, ok := orders[row.OrderID]; ok && row.OrderID > 0 {
			d.OrderNo, d.OrderPlanID, d.OrderType = o.OrderNo, o.PlanID, o.Type
		}
		if u, ok := users[row.UserID]; ok {
			d.User = &userBriefView{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName,
				Email: u.Email, Role: u.Role, Status: u.Status}
		}
		out.Rows[i] = d
	}
	return httpx.OK(w, out)
}
