package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the subscription endpoints.
const (
	MsgSubscriptionNotFound = "订阅不存在"
)

// subscriptionView is a subscription as admins see it: the spec's fields
// with the status as read now (an active one past its end is expired),
// the notes, and the user's and plan's names ("" when they are gone).
type subscriptionView struct {
	userPlanRow
	Username string `json:"username"`
	PlanName string `json:"plan_name"`
}

// subscriptionViews views rows with their names, loaded in two queries.
func (s *Server) subscriptionViews(ctx context.Context, rows []store.UserPlan) ([]subscriptionView, error) {
	userIDs, planIDs := make([]int64, len(rows)), make([]int64, len(rows))
	for i, row := range rows {
		userIDs[i], planIDs[i] = row.UserID, row.PlanID
	}
	users, err := s.Store.UserBriefs(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	plans, err := s.Store.PlanNames(ctx, planIDs)
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	views := make([]subscriptionView, len(rows))
	for i, row := range rows {
		v := subscriptionView{userPlanRow: rawUserPlan(row), Username: users[row.UserID].Username, PlanName: plans[row.PlanID]}
		v.Status = plan.Status(row.Status, row.EndTime, now)
		views[i] = v
	}
	return views, nil
}

func (s *Server) writeSubscription(w http.ResponseWriter, r *http.Request, row store.UserPlan) error {
	views, err := s.subscriptionViews(r.Context(), []store.UserPlan{row})
	if err != nil {
		return err
	}
	return httpx.OK(w, views[0])
}

// listSubscriptions filters on user_id and status (as read now).
func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	userID, err := httpx.QueryInt(r, "user_id", 0)
	if err != nil {
		return err
	}
	status, err := httpx.QueryInt(r, "status", 0)
	if err != nil {
		return err
	}
	if status != 0 {
		if msg := plan.ValidateSubStatus(int(status)); msg != "" {
			return httpx.Fail(msg)
		}
	}
	return s.writeSubscriptions(w, r, store.UserPlanFilter{UserID: userID, Status: int(status)})
}

func (s *Server) searchSubscriptions(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeSubscriptions(w, r, store.UserPlanFilter{Keyword: keyword})
}

func (s *Server) writeSubscriptions(w http.ResponseWriter, r *http.Request, f store.UserPlanFilter) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	f.Now = time.Now().Unix()
	rows, total, err := s.Store.ListUserPlans(r.Context(), f, pg)
	if err != nil {
		return err
	}
	views, err := s.subscriptionViews(r.Context(), rows)
	if err != nil {
		return err
	}
	return httpx.OKList(w, views, total)
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	row, err := s.subscriptionOfPath(r)
	if err != nil {
		return err
	}
	return s.writeSubscription(w, r, row)
}

// subscriptionOfPath reads the subscription the {id} path value names.
func (s *Server) subscriptionOfPath(r *http.Request) (store.UserPlan, error) {
	id, err := httpx.PathID(r)
	if err != nil {
		return store.UserPlan{}, err
	}
	row, err := s.Store.UserPlanByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UserPlan{}, httpx.Fail(MsgSubscriptionNotFound)
	}
	return row, err
}

type createSubscriptionRequest struct {
	UserID       int64  `json:"user_id"`
	PlanID       int64  `json:"plan_id"`
	BillingType  string `json:"billing_type"`
	DurationDays int    `json:"duration_days"`
	Notes        string `json:"notes"`
}

// createSubscription grants a plan to a user from now on: duration_days
// (≤ 0: the plan's), no source order, status active. Any plan may be
// granted, listed or not; a deleted user may not receive one.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	var req createSubscriptionRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.BillingType = strings.TrimSpace(req.BillingType)
	if req.BillingType == "" {
		req.BillingType = plan.DefaultBilling
	}
	days, daysProblem := plan.SubscriptionDays(req.DurationDays, 0)
	msg := firstProblem(plan.ValidateBillingType(req.BillingType), daysProblem, plan.ValidateNotes(req.Notes))
	if msg != "" {
		return httpx.Fail(msg)
	}
	if req.UserID <= 0 {
		return httpx.Fail(MsgUserNotFound)
	}
	if req.PlanID <= 0 {
		return httpx.Fail(MsgPlanNotFound)
	}
	// A subscription is a credit: the admin top-up rule applies.
	if _, err := s.topupTarget(r, req.UserID); err != nil {
		return err
	}
	row := store.UserPlan{UserID: req.UserID, PlanID: req.PlanID, BillingType: req.BillingType, Notes: req.Notes}
	err := s.Store.CreateUserPlan(r.Context(), &row, days, time.Now().Unix())
	switch {
	case errors.Is(err, store.ErrNoSuchPlan):
		return httpx.Fail(MsgPlanNotFound)
	case errors.Is(err, store.ErrNoSuchUser):
		return httpx.Fail(MsgUserNotFound)
	case err != nil:
		return err
	}
	return s.writeSubscription(w, r, row)
}

type updateSubscriptionRequest struct {
	ID          int64   `json:"id"`
	EndTime     *int64  `json:"end_time"`
	Status      *int    `json:"status"`
	Notes       *string `json:"notes"`
	BillingType *string `json:"billing_type"`
}

// updateSubscription changes the end, status, notes or billing type of a
// subscription. Setting status 1 on one whose end has passed leaves it
// expired as read; moving its end later makes it active again.
func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) error {
	var req updateSubscriptionRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	var problems []string
	if req.Status != nil {
		problems = append(problems, plan.ValidateSubStatus(*req.Status))
	}
	if req.BillingType != nil {
		bt := strings.TrimSpace(*req.BillingType)
		req.BillingType = &bt
		problems = append(problems, plan.ValidateBillingType(bt))
	}
	if req.Notes != nil {
		problems = append(problems, plan.ValidateNotes(*req.Notes))
	}
	if msg := firstProblem(problems...); msg != "" {
		return httpx.Fail(msg)
	}
	patch := store.UserPlanPatch{EndTime: req.EndTime, Status: req.Status, Notes: req.Notes, BillingType: req.BillingType}
	row, err := s.Store.UpdateUserPlan(r.Context(), req.ID, patch, func(after store.UserPlan) error {
		if msg := plan.ValidateEndTime(after.StartTime, after.EndTime); req.EndTime != nil && msg != "" {
			return httpx.Fail(msg)
		}
		return nil
	})
	var refused *httpx.Error
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgSubscriptionNotFound)
	case errors.As(err, &refused):
		return refused
	case err != nil:
		return err
	}
	return s.writeSubscription(w, r, row)
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteUserPlan, MsgSubscriptionNotFound)
}
