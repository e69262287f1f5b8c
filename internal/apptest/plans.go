package apptest

import "encoding/json"

// PlanLimits is a plan's model_limits as a test writes it: model → rule
// fields (period_h, request_period, …).
type PlanLimits map[string]map[string]int64

// NewPlan creates a listed plan through the management API and returns its
// id. extra adds or overrides fields (default_model, tokens, …).
func (g *Gateway) NewPlan(name string, limits PlanLimits, extra map[string]any) int64 {
	g.Env.t.Helper()
	text, _ := json.Marshal(limits)
	body := map[string]any{"name": name, "price": 10, "duration_days": 30, "status": 1, "model_limits": string(text)}
	for k, v := range extra {
		body[k] = v
	}
	var p struct {
		ID int64 `json:"id"`
	}
	g.Root.OK("POST", "/api/plan/", body).Decode(g.Env.t, &p)
	return p.ID
}

// Subscribe gives user a subscription to plan for days days from now and
// returns its id.
func (g *Gateway) Subscribe(userID, planID int64, days int) int64 {
	g.Env.t.Helper()
	var s struct {
		ID int64 `json:"id"`
	}
	g.Root.OK("POST", "/api/subscription/", map[string]any{"user_id": userID, "plan_id": planID, "duration_days": days}).Decode(g.Env.t, &s)
	return s.ID
}

// AddModel offers model too: a price (CNY per 1M tokens) and a channel of
// the default group to upstreamURL.
func (g *Gateway) AddModel(model, upstreamURL string, input, output float64) {
	g.Env.t.Helper()
	g.Root.OK("POST", "/api/channel/", map[string]any{"type": 1, "name": "upstream-" + model, "key": "upstream-key",
		"base_url": upstreamURL, "models": model, "group": "default"})
	g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": model, "input_price": input, "output_price": output})
}
