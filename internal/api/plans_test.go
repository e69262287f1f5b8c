package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/user"
)

// planInfo is a plan view as tests read it.
type planInfo struct {
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

// planBody is a valid create body; extra pairs override its fields.
func planBody(name string, kv ...any) map[string]any {
	b := map[string]any{
		"name": name, "price": 9.9, "tokens": 1000, "duration_days": 30, "status": 1,
		"model_limits":  `{"gpt-4o":{"request_period":10},"gpt-4o-mini":{}}`,
		"default_model": "gpt-4o-mini", "description": "a plan", "features": "fast\nsafe",
		"sort": 0, "duration_text": "一个月", "recommended": true,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func createPlan(t *testing.T, c *apptest.Client, body map[string]any) planInfo {
	t.Helper()
	return apptest.OKData[planInfo](c, "POST", "/api/plan/", body)
}

func planTotal(t *testing.T, c *apptest.Client) int64 {
	t.Helper()
	return c.OK("GET", "/api/plan/", nil).Total
}

func TestPlanCreateAndRead(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	if p.ID == 0 || p.CreatedTime == 0 || p.UpdatedTime != p.CreatedTime {
		t.Fatalf("created %+v", p)
	}
	want := `{"gpt-4o":{"period_h":5,"request_period":10},"gpt-4o-mini":{"period_h":5}}`
	if p.ModelLimits != want || p.DefaultModel != "gpt-4o-mini" || !slices.Equal(p.Features, []string{"fast", "safe"}) ||
		p.Price != 9.9 || p.Tokens != 1000 || p.DurationDays != 30 || p.DurationText != "一个月" || !p.Recommended || p.Status != 1 {
		t.Fatalf("created %+v", p)
	}
	var got planInfo
	root.OK("GET", apptest.Path("/api/plan/%d", p.ID), nil).Decode(t, &got)
	if got.ModelLimits != want || !slices.Equal(got.Features, p.Features) || got.CreatedTime != p.CreatedTime {
		t.Fatalf("get %+v", got)
	}
	// Features as an array, model_limits as an object: both accepted.
	q := createPlan(t, root, planBody("Array", "features", []string{" one ", "", "two"},
		"model_limits", map[string]any{"m": map[string]any{"token_week": 5}}, "default_model", ""))
	if !slices.Equal(q.Features, []string{"one", "two"}) || q.ModelLimits != `{"m":{"period_h":5,"token_week":5}}` {
		t.Fatalf("array create %+v", q)
	}
	// Defaults of a minimal body: listed, 30 days, no features, no models.
	m := createPlan(t, root, map[string]any{"name": "Min"})
	if m.Status != 1 || m.DurationDays != 30 || m.Features == nil || len(m.Features) != 0 || m.ModelLimits != "{}" {
		t.Fatalf("minimal create %+v", m)
	}
	root.Fail("GET", "/api/plan/999999", nil, http.StatusOK, api.MsgPlanNotFound)
}

func TestPlanValidationSavesNothing(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	bad := []struct {
		body map[string]any
		want string
	}{
		{planBody("R3", "default_model", "claude"), `默认模型 "claude" 必须是 model_limits 中配置的模型`},
		{planBody("R3b", "model_limits", "", "default_model", "gpt-4o"), `默认模型 "gpt-4o" 必须是 model_limits 中配置的模型`},
		{planBody("J", "model_limits", "not json"), plan.MsgLimitsNotObject},
		{planBody("J", "model_limits", "[1]"), plan.MsgLimitsNotObject},
		{planBody("J", "model_limits", 5), plan.MsgLimitsNotObject},
		{planBody("U", "model_limits", `{"gpt-4o":{"requests":1}}`), `model_limits 中模型 "gpt-4o" 的规则含有未知字段 "requests",可用字段:period_h, request_period, request_week, request_month, token_period, token_week, token_month`},
		{planBody("N", "model_limits", `{"gpt-4o":{"token_week":-1}}`), `model_limits 中模型 "gpt-4o" 的 token_week 不能为负数`},
		{planBody("P", "model_limits", `{"gpt-4o":{"period_h":0}}`), `model_limits 中模型 "gpt-4o" 的 period_h 必须在 1 到 720 之间`},
		{planBody("F", "model_limits", `{"gpt-4o":{"request_week":1.5}}`), `model_limits 中模型 "gpt-4o" 的 request_week 必须是整数`},
		{planBody("B", "model_limits", `{"gpt-4o":{"request_week":99999999999999999999}}`), `model_limits 中模型 "gpt-4o" 的 request_week 不能超过 1000000000000000`},
		{planBody("E", "model_limits", `{"":{}}`), plan.MsgLimitsModelInvalid},
		{planBody("D", "model_limits", `{"a":{},"a":{}}`), `model_limits 中的模型 "a" 重复`},
		{planBody("O", "model_limits", `{"a":7}`), `model_limits 中模型 "a" 的规则必须是 JSON 对象`},
		{planBody("Neg", "price", -1), plan.MsgPriceInvalid},
		{planBody("Neg", "tokens", -1), plan.MsgTokensRange},
		{planBody("Neg", "duration_days", -1), plan.MsgDurationRange},
		{planBody("Neg", "duration_days", 0), plan.MsgDurationRange},
		{planBody("S", "status", 2), plan.MsgStatusInvalid},
		{planBody(""), plan.MsgNameLength},
		{planBody(strings.Repeat("x", 65)), plan.MsgNameLength},
		{planBody("a\x00b"), "套餐名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{planBody("ok", "description", "bad\x00"), "套餐描述 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{planBody("ok", "features", 5), plan.MsgFeaturesInvalid},
		{planBody("ok", "features", []any{"a", 1}), plan.MsgFeaturesInvalid},
	}
	for _, tt := range bad {
		root.Fail("POST", "/api/plan/", tt.body, http.StatusOK, tt.want)
	}
	root.Fail("POST", "/api/plan/", `{"name":"x","price":"1"}`, http.StatusOK, "无效的参数")
	if n := planTotal(t, root); n != 0 {
		t.Fatalf("%d plans saved by failed creates", n)
	}

	// Update: partial, rule 3 checked on the result, nothing saved on failure.
	p := createPlan(t, root, planBody("Pro"))
	root.Fail("PUT", "/api/plan/", map[string]any{"id": p.ID, "default_model": "claude"}, http.StatusOK,
		`默认模型 "claude" 必须是 model_limits 中配置的模型`)
	// Limits that drop the default model are refused as well.
	root.Fail("PUT", "/api/plan/", map[string]any{"id": p.ID, "name": "Renamed", "model_limits": `{"gpt-4o":{}}`}, http.StatusOK,
		`默认模型 "gpt-4o-mini" 必须是 model_limits 中配置的模型`)
	root.Fail("PUT", "/api/plan/", map[string]any{"id": p.ID, "name": "Renamed", "model_limits": `{"gpt-4o":{"x":1}}`}, http.StatusOK, "")
	root.Fail("PUT", "/api/plan/", map[string]any{"id": p.ID, "price": -0.5}, http.StatusOK, plan.MsgPriceInvalid)
	root.Fail("PUT", "/api/plan/", map[string]any{"name": "x"}, http.StatusOK, api.MsgIDRequired)
	root.Fail("PUT", "/api/plan/", map[string]any{"id": 999999, "name": "x"}, http.StatusOK, api.MsgPlanNotFound)
	var got planInfo
	root.OK("GET", apptest.Path("/api/plan/%d", p.ID), nil).Decode(t, &got)
	if got.Name != "Pro" || got.ModelLimits != p.ModelLimits || got.Price != p.Price || got.UpdatedTime != p.UpdatedTime {
		t.Fatalf("failed updates changed the plan: %+v", got)
	}
	// Both together pass; a field not sent keeps its value.
	var up planInfo
	root.OK("PUT", "/api/plan/", map[string]any{"id": p.ID, "model_limits": `{"gpt-4o":{}}`, "default_model": "",
		"features": []string{"x"}, "status": 0}).Decode(t, &up)
	if up.ModelLimits != `{"gpt-4o":{"period_h":5}}` || up.DefaultModel != "" || up.Name != "Pro" || up.Price != 9.9 ||
		!slices.Equal(up.Features, []string{"x"}) || up.Status != 0 || up.CreatedTime != p.CreatedTime {
		t.Fatalf("updated %+v", up)
	}
	root.OK("PUT", "/api/plan/", map[string]any{"id": p.ID, "features": "a\nb"}).Decode(t, &up)
	if !slices.Equal(up.Features, []string{"a", "b"}) || up.ModelLimits != `{"gpt-4o":{"period_h":5}}` {
		t.Fatalf("features update %+v", up)
	}
}

func TestPlanListSearchAndUserCatalogue(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	a := createPlan(t, root, planBody("Alpha", "sort", 2, "price", 1))
	b := createPlan(t, root, planBody("Beta", "sort", 1, "price", 50, "description", "the big one"))
	c := createPlan(t, root, planBody("Gamma", "sort", 1, "price", 5))
	createPlan(t, root, planBody("Hidden", "status", 0))

	var rows []planInfo
	r := root.OK("GET", "/api/plan/?p=0&page_size=2", nil)
	r.Decode(t, &rows)
	if r.Total != 4 || len(rows) != 2 || rows[0].Name != "Hidden" || rows[1].Name != "Gamma" {
		t.Fatalf("page 0: total %d %+v", r.Total, rows)
	}
	root.OK("GET", "/api/plan/?p=1&page_size=2", nil).Decode(t, &rows)
	if len(rows) != 2 || rows[0].ID != b.ID || rows[1].ID != a.ID {
		t.Fatalf("page 1: %+v", rows)
	}
	r = root.OK("GET", "/api/plan/search?keyword=big", nil)
	r.Decode(t, &rows)
	if r.Total != 1 || rows[0].ID != b.ID {
		t.Fatalf("search by description: %+v", rows)
	}
	r = root.OK("GET", "/api/plan/search?keyword=amm", nil)
	r.Decode(t, &rows)
	if r.Total != 1 || rows[0].ID != c.ID {
		t.Fatalf("search by name: %+v", rows)
	}
	root.Fail("GET", "/api/plan/search?keyword=%00", nil, http.StatusOK, "")

	// Users see listed plans by sort, then price.
	u, _ := e.NewUser("buyer", user.RoleUser)
	u.OK("GET", "/api/plan/list", nil).Decode(t, &rows)
	var names []string
	for _, p := range rows {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"Gamma", "Beta", "Alpha"}) {
		t.Fatalf("user catalogue = %v", names)
	}
	if rows[0].Features == nil || rows[0].CreatedTime == 0 {
		t.Fatalf("catalogue view %+v", rows[0])
	}
}

func TestPlanRoles(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	u, _ := e.NewUser("plain", user.RoleUser)
	admin, _ := e.NewUser("admin1", user.RoleAdmin)
	const denied = "无权进行此操作,权限不足"
	for _, path := range []string{"/api/plan/", "/api/plan/search?keyword=a", apptest.Path("/api/plan/%d", p.ID),
		"/api/subscription/", "/api/subscription/search?keyword=a", "/api/subscription/1", "/api/diag/subscriptions"} {
		u.Fail("GET", path, nil, http.StatusOK, denied)
	}
	u.Fail("POST", "/api/subscription/", map[string]any{"user_id": 1, "plan_id": p.ID}, http.StatusOK, denied)
	// Admins read plans but only root writes them.
	admin.OK("GET", "/api/plan/", nil)
	admin.OK("GET", apptest.Path("/api/plan/%d", p.ID), nil)
	admin.Fail("POST", "/api/plan/", planBody("X"), http.StatusOK, denied)
	admin.Fail("PUT", "/api/plan/", map[string]any{"id": p.ID, "name": "X"}, http.StatusOK, denied)
	admin.Fail("DELETE", apptest.Path("/api/plan/%d", p.ID), nil, http.StatusOK, denied)
	e.Client().Fail("GET", "/api/plan/list", nil, http.StatusUnauthorized, "")
	if n := planTotal(t, root); n != 1 {
		t.Fatalf("%d plans", n)
	}
}
