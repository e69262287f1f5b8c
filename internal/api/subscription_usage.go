package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// subscriptionUsageView is a subscription with what it has used: the
// subscription view, its lifetime totals, and per model the status of
// every limit its plan configures.
type subscriptionUsageView struct {
	subscriptionView
	LifetimeRequests int64            `json:"lifetime_requests"`
	LifetimeTokens   int64            `json:"lifetime_tokens"`
	Models           []modelUsageView `json:"models"`
}

// modelUsageView is one model's limits. Listed is false for a model with
// usage that the plan's model_limits no longer name: it has no limits.
type modelUsageView struct {
	Model  string      `json:"model"`
	Listed bool        `json:"listed"`
	Limits []limitView `json:"limits"`
}

// limitView is one configured limit in its current window. WindowHours is
// 0 for the lifetime allowance (tokens); ResetTime (unix seconds) is when
// the oldest counted use leaves the window, 0 when the window holds none
// and for the lifetime allowance, which never frees.
type limitView struct {
	Name        string `json:"name"`
	WindowHours int64  `json:"window_hours"`
	Limit       int64  `json:"limit"`
	Used        int64  `json:"used"`
	Remaining   int64  `json:"remaining"`
	ResetTime   int64  `json:"reset_time"`
}

// subscriptionUsage views rows with their usage at now: the plans in one
// query, then one usage read per subscription.
func (s *Server) subscriptionUsage(ctx context.Context, rows []store.UserPlan, now time.Time) ([]subscriptionUsageView, error) {
	views, err := s.subscriptionViews(ctx, rows)
	if err != nil {
		return nil, err
	}
	planIDs := make([]int64, len(rows))
	for i, row := range rows {
		planIDs[i] = row.PlanID
	}
	plans, err := s.Store.PlansByID(ctx, planIDs)
	if err != nil {
		return nil, err
	}
	out := make([]subscriptionUsageView, len(rows))
	for i, row := range rows {
		v := subscriptionUsageView{subscriptionView: views[i], Models: []modelUsageView{}}
		v.Status = plan.Status(row.Status, row.EndTime, now.Unix())
		// A deleted plan (only expired or cancelled subscriptions may keep
		// its id) has no rules: the usage still shows, unlisted.
		rules := map[string]planlimit.Rule{}
		if p, ok := plans[row.PlanID]; ok {
			limits, problem := plan.ParseLimits(p.ModelLimits)
			if problem != nil {
				return nil, fmt.Errorf("plan %d: stored model_limits: %s", p.ID, problem.Error())
			}
			for model, rule := range limits {
				rules[model] = rule.Counted(p.Tokens)
			}
		}
		usage, err := s.Store.UsageOf(ctx, row.ID, rules, now)
		if err != nil {
			return nil, err
		}
		v.LifetimeRequests, v.LifetimeTokens = usage.LifetimeRequests, usage.LifetimeTokens
		for _, m := range usage.Models {
			rule, listed := rules[m.Model]
			mv := modelUsageView{Model: m.Model, Listed: listed, Limits: make([]limitView, 0, len(m.Limits))}
			for _, l := range m.Limits {
				lv := limitView{Name: l.Name, Limit: l.Limit, Used: l.Used, Remaining: l.Remaining}
				if !l.Lifetime {
					lv.WindowHours = int64(rule.Length(l.Window) / time.Hour)
				}
				if !l.Reset.IsZero() {
					lv.ResetTime = l.Reset.Unix()
				}
				mv.Limits = append(mv.Limits, lv)
			}
			v.Models = append(v.Models, mv)
		}
		out[i] = v
	}
	return out, nil
}

// selfSubscriptions answers the caller's active subscriptions, earliest
// end first (the order the relay will charge them in), with usage.
func (s *Server) selfSubscriptions(w http.ResponseWriter, r *http.Request) error {
	now := time.Now()
	rows, err := s.Store.ActiveUserPlans(r.Context(), caller(r).ID, now.Unix())
	if err != nil {
		return err
	}
	views, err := s.subscriptionUsage(r.Context(), rows, now)
	if err != nil {
		return err
	}
	return httpx.OK(w, views)
}

// subscriptionUsageOf answers one subscription with usage, in any status.
// Only its owner or an admin may read it; anyone else gets the failure of
// a missing id, so ids of other users' subscriptions cannot be probed.
func (s *Server) subscriptionUsageOf(w http.ResponseWriter, r *http.Request) error {
	row, err := s.subscriptionOfPath(r)
	if err != nil {
		return err
	}
	if u := caller(r); row.UserID != u.ID && u.Role < user.RoleAdmin {
		return httpx.Fail(MsgSubscriptionNotFound)
	}
	views, err := s.subscriptionUsage(r.Context(), []store.UserPlan{row}, time.Now())
	if err != nil {
		return err
	}
	return httpx.OK(w, views[0])
}
