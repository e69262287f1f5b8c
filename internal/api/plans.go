package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the plan endpoints.
const (
	MsgPlanNotFound = "套餐不存在"
	MsgPlanInUse    = "该套餐仍有生效中的订阅,不能删除;停售请将其下架(status 设为 0)"
)

// Defaults of a create request that leaves a field out.
const (
	defaultPlanStatus       = plan.StatusListed
	defaultPlanDurationDays = 30
)

// planView is a plan as responses show it: every spec field, features as
// an array, model_limits as its canonical JSON text.
type planView struct {
	ID           int64    `json:"id"`
	Name         string   `json:"name"`
	Price        float64  `json:"price"`
	Tokens       int64    `json:"tokens"`
	ModelLimits  string   `json:"model_limits"`
	DefaultModel string   `json:"default_model"`
	Description  string   `json:"description"`
	Features     []string `json:"features"`
	Sort         int      `json:"sort"`
	Status       int      `json:"status"`
	DurationDays int      `json:"duration_days"`
	DurationText string   `json:"duration_text"`
	Recommended  bool     `json:"recommended"`
	CreatedTime  int64    `json:"created_time"`
	UpdatedTime  int64    `json:"updated_time"`
}

func viewPlan(p *store.Plan) planView {
	return planView{
		ID: p.ID, Name: p.Name, Price: p.Price, Tokens: p.Tokens, ModelLimits: p.ModelLimits,
		DefaultModel: p.DefaultModel, Description: p.Description, Features: plan.DecodeFeatures(p.Features),
		Sort: p.Sort, Status: p.Status, DurationDays: p.DurationDays, DurationText: p.DurationText,
		Recommended: p.Recommended, CreatedTime: p.CreatedTime, UpdatedTime: p.UpdatedTime,
	}
}

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request) error {
	return s.writePlans(w, r, "")
}

func (s *Server) searchPlans(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writePlans(w, r, keyword)
}

func (s *Server) writePlans(w http.ResponseWriter, r *http.Request, keyword string) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListPlans(r.Context(), keyword, pg)
	if err != nil {
		return err
	}
	views := make([]planView, len(rows))
	for i := range rows {
		views[i] = viewPlan(&rows[i])
	}
	return httpx.OKList(w, views, total)
}

// listedPlans is the users' catalogue: listed plans by sort, then price.
func (s *Server) listedPlans(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.Store.ListedPlans(r.Context())
	if err != nil {
		return err
	}
	return writeViews(w, rows, viewPlan)
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	row, err := s.Store.PlanByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgPlanNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewPlan(&row))
}

// planRequest is the body of create and update. A nil field (or empty raw
// JSON) was not sent: create takes the default, update keeps the value.
// model_limits is JSON text (spec) or, for convenience, the object itself;
// features a string (one item per line) or an array of strings.
type planRequest struct {
	ID           int64           `json:"id"`
	Name         *string         `json:"name"`
	Price        *float64        `json:"price"`
	Tokens       *int64          `json:"tokens"`
	ModelLimits  json.RawMessage `json:"model_limits"`
	DefaultModel *string         `json:"default_model"`
	Description  *string         `json:"description"`
	Features     json.RawMessage `json:"features"`
	Sort         *int            `json:"sort"`
	Status       *int            `json:"status"`
	DurationDays *int            `json:"duration_days"`
	DurationText *string         `json:"duration_text"`
	Recommended  *bool           `json:"recommended"`
}

// apply sets the fields req carries on p and checks the whole plan,
// including rule 3 on the result.
func (req *planRequest) apply(p *plan.Plan) *plan.Problem {
	if req.Name != nil {
		p.Name = plan.NormalizeName(*req.Name)
	}
	setIfSent(&p.Price, req.Price)
	setIfSent(&p.Tokens, req.Tokens)
	if raw := bytes.TrimSpace(req.ModelLimits); len(raw) > 0 && string(raw) != "null" {
		text := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &text); err != nil {
				return &plan.Problem{Format: plan.MsgLimitsNotObject}
			}
		}
		limits, problem := plan.ParseLimits(text)
		if problem != nil {
			return problem
		}
		p.Limits = limits
	}
	if req.DefaultModel != nil {
		p.DefaultModel = plan.NormalizeName(*req.DefaultModel)
	}
	setIfSent(&p.Description, req.Description)
	if len(req.Features) > 0 {
		features, problem := plan.ParseFeatures(req.Features)
		if problem != nil {
			return problem
		}
		p.Features = features
	}
	setIfSent(&p.Sort, req.Sort)
	setIfSent(&p.Status, req.Status)
	setIfSent(&p.DurationDays, req.DurationDays)
	if req.DurationText != nil {
		p.DurationText = plan.NormalizeName(*req.DurationText)
	}
	setIfSent(&p.Recommended, req.Recommended)
	return p.Validate()
}

// planOf reads a stored plan into the rules' type. Stored limits were
// canonical when written, so they parse.
func planOf(row *store.Plan) plan.Plan {
	limits, _ := plan.ParseLimits(row.ModelLimits)
	return plan.Plan{
		Name: row.Name, Price: row.Price, Tokens: row.Tokens, Limits: limits, DefaultModel: row.DefaultModel,
		Description: row.Description, Features: plan.DecodeFeatures(row.Features), Sort: row.Sort,
		Status: row.Status, DurationDays: row.DurationDays, DurationText: row.DurationText, Recommended: row.Recommended,
	}
}

// storePlan writes the checked plan p into row, keeping its id and times.
func storePlan(row *store.Plan, p *plan.Plan) {
	row.Name, row.Price, row.Tokens = p.Name, p.Price, p.Tokens
	row.ModelLimits, row.DefaultModel = p.Limits.Canonical(), p.DefaultModel
	row.Description, row.Features = p.Description, plan.EncodeFeatures(p.Features)
	row.Sort, row.Status, row.DurationDays = p.Sort, p.Status, p.DurationDays
	row.DurationText, row.Recommended = p.DurationText, p.Recommended
}

// problemError turns a rule's refusal into the client's failure.
func problemError(p *plan.Problem) error {
	return httpx.Failf(p.Format, p.Args...)
}

func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) error {
	var req planRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	p := plan.Plan{Limits: plan.Limits{}, Features: []string{}, Status: defaultPlanStatus, DurationDays: defaultPlanDurationDays}
	if problem := req.apply(&p); problem != nil {
		return problemError(problem)
	}
	var row store.Plan
	storePlan(&row, &p)
	if err := s.Store.CreatePlan(r.Context(), &row); err != nil {
		return err
	}
	return httpx.OK(w, viewPlan(&row))
}

// updatePlan changes the fields the body carries; the plan is checked
// whole afterwards (rule 3 included), so a model_limits that drops the
// default model is refused as a default model outside the limits is.
func (s *Server) updatePlan(w http.ResponseWriter, r *http.Request) error {
	var req planRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	row, err := s.Store.UpdatePlan(r.Context(), req.ID, func(row *store.Plan) error {
		p := planOf(row)
		if problem := req.apply(&p); problem != nil {
			return problemError(problem)
		}
		storePlan(row, &p)
		return nil
	})
	var refused *httpx.Error
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgPlanNotFound)
	case errors.As(err, &refused):
		return refused
	case err != nil:
		return err
	}
	return httpx.OK(w, viewPlan(&row))
}

// deletePlan removes a plan no active subscription uses; unlisting is the
// way to stop selling one that is in use.
func (s *Server) deletePlan(w http.ResponseWriter, r *http.Request) error {
	err := deleteByID(w, r, func(ctx context.Context, id int64) error {
		return s.Store.DeletePlan(ctx, id, time.Now().Unix())
	}, MsgPlanNotFound)
	if errors.Is(err, store.ErrConflict) {
		return httpx.Fail(MsgPlanInUse)
	}
	return err
}
