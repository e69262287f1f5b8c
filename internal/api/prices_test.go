package api_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Spec messages, written out so a changed constant cannot hide a mismatch.
const (
	specModelNameEmpty = "模型名称不能为空"
	specIDRequired     = "ID不能为空"
	specInvalidID      = "无效的ID"
	specGroupNameEmpty = "分组名称不能为空"
	specInvalidParams  = "无效的参数"
)

type modelPrice struct {
	ID              int64   `json:"id"`
	ModelName       string  `json:"model_name"`
	InputPrice      float64 `json:"input_price"`
	OutputPrice     float64 `json:"output_price"`
	CachedPrice     float64 `json:"cached_price"`
	PerRequestPrice float64 `json:"per_request_price"`
	BillingType     string  `json:"billing_type"`
	Enabled         bool    `json:"enabled"`
	CreatedAt       int64   `json:"created_at"`
	UpdatedAt       int64   `json:"updated_at"`
}

type groupPrice struct {
	ID        int64   `json:"id"`
	GroupName string  `json:"group_name"`
	ModelName string  `json:"model_name"`
	Discount  float64 `json:"discount"`
	CreatedAt int64   `json:"created_at"`
	UpdatedAt int64   `json:"updated_at"`
}

func modelPrices(t *testing.T, c *apptest.Client) []modelPrice {
	t.Helper()
	return apptest.OKData[[]modelPrice](c, "GET", "/api/model_price/", nil)
}

func groupPrices(t *testing.T, c *apptest.Client) []groupPrice {
	t.Helper()
	return apptest.OKData[[]groupPrice](c, "GET", "/api/group_price/", nil)
}

// isDBDuplicate reports whether msg is a database's unique-violation text
// (SQLite "UNIQUE constraint failed", PostgreSQL "duplicate key value",
// MySQL "Duplicate entry").
func isDBDuplicate(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "unique") || strings.Contains(m, "duplicate")
}

func TestModelPriceCreateAndList(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	if got := modelPrices(t, root); len(got) != 0 {
		t.Fatalf("model prices on a fresh install = %+v", got)
	}
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "  gpt-4o-mini  "})
	root.OK("POST", "/api/model_price/", map[string]any{
		"model_name": "gpt-4o", "input_price": 2.5, "output_price": 10, "cached_price": 1.25,
		"per_request_price": 0.01, "billing_type": "per_request", "enabled": false,
	})
	list := modelPrices(t, root)
	if len(list) != 2 {
		t.Fatalf("list = %+v", list)
	}
	// Newest first.
	full, defaults := list[0], list[1]
	if full.ID == 0 || full.CreatedAt == 0 || full.UpdatedAt != full.CreatedAt {
		t.Fatalf("ids and times: %+v", full)
	}
	want := modelPrice{ID: full.ID, ModelName: "gpt-4o", InputPrice: 2.5, OutputPrice: 10, CachedPrice: 1.25,
		PerRequestPrice: 0.01, BillingType: "per_request", Enabled: false, CreatedAt: full.CreatedAt, UpdatedAt: full.UpdatedAt}
	if full != want {
		t.Fatalf("created = %+v, want %+v", full, want)
	}
	want = modelPrice{ID: defaults.ID, ModelName: "gpt-4o-mini", BillingType: "token", Enabled: true,
		CreatedAt: defaults.CreatedAt, UpdatedAt: defaults.UpdatedAt}
	if defaults != want {
		t.Fatalf("defaults = %+v, want %+v", defaults, want)
	}
	// The wire shape is exactly the spec's fields.
	raw := string(root.OK("GET", "/api/model_price/", nil).Raw)
	for _, f := range []string{"id", "model_name", "input_price", "output_price", "cached_price",
		"per_request_price", "billing_type", "enabled", "created_at", "updated_at"} {
		if !strings.Contains(raw, `"`+f+`":`) {
			t.Errorf("model price JSON lacks %s: %s", f, raw)
		}
	}
}

func TestModelPriceCreateFailures(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o"})
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"input_price": 1}, specModelNameEmpty},
		{map[string]any{"model_name": "   "}, specModelNameEmpty},
		{map[string]any{"model_name": strings.Repeat("m", 192)}, pricing.MsgModelNameLength},
		{map[string]any{"model_name": "m", "input_price": -1}, pricing.MsgPriceInvalid},
		{map[string]any{"model_name": "m", "output_price": -0.5}, pricing.MsgPriceInvalid},
		{map[string]any{"model_name": "m", "cached_price": -2}, pricing.MsgPriceInvalid},
		{map[string]any{"model_name": "m", "per_request_price": -3}, pricing.MsgPriceInvalid},
		{map[string]any{"model_name": "m", "billing_type": "monthly"}, pricing.MsgBillingType},
		{`{"model_name":"m","input_price":1e999}`, specInvalidParams}, // not a finite float
		{`{"model_name":"m",`, specInvalidParams},
		{`{"model_name":"m","input_price":"1"}`, specInvalidParams},
	} {
		root.Fail("POST", "/api/model_price/", tt.body, http.StatusOK, tt.msg)
	}
	// Duplicate name: the database's own unique-violation text.
	r := root.Fail("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o", "input_price": 9}, http.StatusOK, "")
	if !isDBDuplicate(r.Message) || r.Message == httpx.MsgInternal {
		t.Fatalf("duplicate model_name message = %q, want the database's unique-violation text", r.Message)
	}
	list := modelPrices(t, root)
	if len(list) != 1 || list[0].InputPrice != 0 {
		t.Fatalf("failed creates changed the prices: %+v", list)
	}
}

func TestModelPriceUpdate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var p modelPrice
	root.OK("POST", "/api/model_price/", map[string]any{
		"model_name": "gpt-4o", "input_price": 2.5, "output_price": 10, "cached_price": 1.25,
	}).Decode(t, &p)
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "other", "input_price": 7})

	// Only the fields sent change; model_name identifies and is not renamed.
	var got modelPrice
	root.OK("PUT", "/api/model_price/", map[string]any{"id": p.ID, "model_name": "renamed", "output_price": 12}).Decode(t, &got)
	want := p
	want.OutputPrice, want.UpdatedAt = 12, got.UpdatedAt
	if got != want {
		t.Fatalf("after output_price update = %+v, want %+v", got, want)
	}
	root.OK("PUT", "/api/model_price/", map[string]any{"id": p.ID, "billing_type": "per_request", "per_request_price": 0.02, "enabled": false})
	root.OK("PUT", "/api/model_price/", map[string]any{"id": p.ID, "input_price": 0})
	want.BillingType, want.PerRequestPrice, want.Enabled, want.InputPrice = "per_request", 0.02, false, 0
	if got := priceByName(t, root, "gpt-4o"); got.UpdatedAt < want.UpdatedAt || !samePrice(got, want) {
		t.Fatalf("after partial updates = %+v, want %+v", got, want)
	}
	if got := priceByName(t, root, "other"); got.InputPrice != 7 {
		t.Fatalf("another price changed: %+v", got)
	}
	root.OK("PUT", "/api/model_price/", map[string]any{"id": p.ID, "enabled": true})
	if got := priceByName(t, root, "gpt-4o"); !got.Enabled || got.PerRequestPrice != 0.02 {
		t.Fatalf("enabled again = %+v", got)
	}

	before := modelPrices(t, root)
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"id": 0, "input_price": 1}, specIDRequired},
		{map[string]any{"input_price": 1}, specIDRequired},
		{map[string]any{"id": 987654, "input_price": 1}, api.MsgModelPriceNotFound},
		{map[string]any{"id": p.ID, "input_price": -1}, pricing.MsgPriceInvalid},
		{map[string]any{"id": p.ID, "output_price": 5, "cached_price": -1}, pricing.MsgPriceInvalid},
		{map[string]any{"id": p.ID, "billing_type": ""}, pricing.MsgBillingType},
		{map[string]any{"id": p.ID, "billing_type": "free", "input_price": 3}, pricing.MsgBillingType},
		{`{"id":` + apptest.Path("%d", p.ID) + `,"input_price":3`, specInvalidParams},
		{`{"id":"1","input_price":3}`, specInvalidParams},
	} {
		root.Fail("PUT", "/api/model_price/", tt.body, http.StatusOK, tt.msg)
	}
	if after := modelPrices(t, root); !reflect.DeepEqual(after, before) {
		t.Fatalf("failed updates changed prices:\nbefore %+v\nafter  %+v", before, after)
	}
}

func priceByName(t *testing.T, c *apptest.Client, name string) modelPrice {
	t.Helper()
	for _, p := range modelPrices(t, c) {
		if p.ModelName == name {
			return p
		}
	}
	t.Fatalf("no model price %q", name)
	return modelPrice{}
}

// samePrice compares everything but updated_at.
func samePrice(a, b modelPrice) bool {
	a.UpdatedAt, b.UpdatedAt = 0, 0
	return a == b
}

func TestModelPriceDelete(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var p modelPrice
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o"}).Decode(t, &p)
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "keep"})
	for _, path := range []string{"/api/model_price/abc", "/api/model_price/0", "/api/model_price/-5", "/api/model_price/1.5"} {
		root.Fail("DELETE", path, nil, http.StatusOK, specInvalidID)
	}
	root.Fail("DELETE", "/api/model_price/987654", nil, http.StatusOK, api.MsgModelPriceNotFound)
	root.OK("DELETE", apptest.Path("/api/model_price/%d", p.ID), nil)
	root.Fail("DELETE", apptest.Path("/api/model_price/%d", p.ID), nil, http.StatusOK, api.MsgModelPriceNotFound)
	root.Fail("PUT", "/api/model_price/", map[string]any{"id": p.ID, "input_price": 1}, http.StatusOK, api.MsgModelPriceNotFound)
	list := modelPrices(t, root)
	if len(list) != 1 || list[0].ModelName != "keep" {
		t.Fatalf("after delete = %+v", list)
	}
	// The name is free again.
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o"})
}

// Concurrent creates of one model name: exactly one wins, the others get
// the duplicate failure, never an internal error.
func TestModelPriceConcurrentDuplicate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var wg sync.WaitGroup
	results := make([]*apptest.Response, 8)
	for i := range results {
		wg.Go(func() {
			results[i] = root.Do("POST", "/api/model_price/", map[string]any{"model_name": "race", "input_price": float64(i)})
		})
	}
	wg.Wait()
	wins := 0
	for _, r := range results {
		switch {
		case r.Status == http.StatusOK && r.Success:
			wins++
		case r.Status != http.StatusOK || !isDBDuplicate(r.Message):
			t.Errorf("concurrent create: %d %s", r.Status, r.Raw)
		}
	}
	if list := modelPrices(t, root); wins != 1 || len(list) != 1 {
		t.Fatalf("%d creates won, %d rows", wins, len(list))
	}
}

func TestGroupPricesSeeded(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	got := map[string]float64{}
	for _, gp := range groupPrices(t, e.Root()) {
		if gp.ModelName != "" || gp.ID == 0 || gp.CreatedAt == 0 {
			t.Fatalf("seeded row %+v", gp)
		}
		got[gp.GroupName] = gp.Discount
	}
	want := map[string]float64{"default": 1, "vip": 1, "svip": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seeded group prices = %v, want %v", got, want)
	}
	// A restart does not seed again.
	root := e.Root()
	for _, gp := range groupPrices(t, root) {
		if gp.GroupName == "vip" {
			root.OK("DELETE", apptest.Path("/api/group_price/%d", gp.ID), nil)
		}
	}
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	if list := groupPrices(t, e2.Root()); len(list) != 2 {
		t.Fatalf("after deleting vip and restarting: %+v", list)
	}
}

func TestGroupPriceCreate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var gp groupPrice
	root.OK("POST", "/api/group_price/", map[string]any{"group_name": " vip ", "model_name": "gpt-4o", "discount": 0.8}).Decode(t, &gp)
	if gp.ID == 0 || gp.GroupName != "vip" || gp.ModelName != "gpt-4o" || gp.Discount != 0.8 || gp.CreatedAt == 0 {
		t.Fatalf("created = %+v", gp)
	}
	root.OK("POST", "/api/group_price/", map[string]any{"group_name": "team"}).Decode(t, &gp)
	if gp.ModelName != "" || gp.Discount != 1 {
		t.Fatalf("defaults = %+v", gp)
	}
	root.OK("POST", "/api/group_price/", map[string]any{"group_name": "team", "model_name": "gpt-4o", "discount": 10})
	before := groupPrices(t, root)
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"model_name": "gpt-4o", "discount": 0.5}, specGroupNameEmpty},
		{map[string]any{"group_name": "  "}, specGroupNameEmpty},
		{map[string]any{"group_name": strings.Repeat("g", 33)}, pricing.MsgGroupNameLength},
		{map[string]any{"group_name": "g", "model_name": strings.Repeat("m", 192)}, pricing.MsgModelNameLength},
		{map[string]any{"group_name": "g", "discount": 0}, pricing.MsgDiscountInvalid},
		{map[string]any{"group_name": "g", "discount": -0.5}, pricing.MsgDiscountInvalid},
		{map[string]any{"group_name": "g", "discount": 10.01}, pricing.MsgDiscountInvalid},
		{`{"group_name":"g"`, specInvalidParams},
	} {
		root.Fail("POST", "/api/group_price/", tt.body, http.StatusOK, tt.msg)
	}
	// (group, model) is unique: the seeded (vip, "") and the one above.
	for _, body := range []map[string]any{
		{"group_name": "vip", "discount": 0.5},
		{"group_name": "vip", "model_name": "gpt-4o", "discount": 0.5},
	} {
		r := root.Fail("POST", "/api/group_price/", body, http.StatusOK, "")
		if !isDBDuplicate(r.Message) {
			t.Fatalf("duplicate group price message = %q", r.Message)
		}
	}
	if after := groupPrices(t, root); !reflect.DeepEqual(after, before) {
		t.Fatalf("failed creates changed group prices:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestGroupPriceUpdateAndDelete(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var gp groupPrice
	root.OK("POST", "/api/group_price/", map[string]any{"group_name": "vip", "model_name": "gpt-4o", "discount": 0.8}).Decode(t, &gp)

	var got groupPrice
	root.OK("PUT", "/api/group_price/", map[string]any{"id": gp.ID, "discount": 0.7}).Decode(t, &got)
	if got.GroupName != "vip" || got.ModelName != "gpt-4o" || got.Discount != 0.7 || got.CreatedAt != gp.CreatedAt {
		t.Fatalf("after discount update = %+v", got)
	}
	root.OK("PUT", "/api/group_price/", map[string]any{"id": gp.ID, "model_name": "claude"}).Decode(t, &got)
	if got.GroupName != "vip" || got.ModelName != "claude" || got.Discount != 0.7 {
		t.Fatalf("after model update = %+v", got)
	}
	root.OK("PUT", "/api/group_price/", map[string]any{"id": gp.ID, "group_name": "svip"}).Decode(t, &got)
	if got.GroupName != "svip" || got.ModelName != "claude" || got.Discount != 0.7 {
		t.Fatalf("after group update = %+v", got)
	}

	before := groupPrices(t, root)
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"id": 0, "discount": 0.5}, specIDRequired},
		{map[string]any{"discount": 0.5}, specIDRequired},
		{map[string]any{"id": 987654, "discount": 0.5}, api.MsgGroupPriceNotFound},
		{map[string]any{"id": gp.ID, "group_name": ""}, specGroupNameEmpty},
		{map[string]any{"id": gp.ID, "discount": 0}, pricing.MsgDiscountInvalid},
		{map[string]any{"id": gp.ID, "model_name": "x", "discount": 11}, pricing.MsgDiscountInvalid},
		{`{"id":1,"discount":0.5`, specInvalidParams},
	} {
		root.Fail("PUT", "/api/group_price/", tt.body, http.StatusOK, tt.msg)
	}
	// Moving onto an existing (group, model) pair: the seeded (svip, "").
	r := root.Fail("PUT", "/api/group_price/", map[string]any{"id": gp.ID, "model_name": ""}, http.StatusOK, "")
	if !isDBDuplicate(r.Message) {
		t.Fatalf("duplicate on update message = %q", r.Message)
	}
	if after := groupPrices(t, root); !reflect.DeepEqual(after, before) {
		t.Fatalf("failed updates changed group prices:\nbefore %+v\nafter  %+v", before, after)
	}

	root.Fail("DELETE", "/api/group_price/abc", nil, http.StatusOK, specInvalidID)
	root.Fail("DELETE", "/api/group_price/987654", nil, http.StatusOK, api.MsgGroupPriceNotFound)
	root.OK("DELETE", apptest.Path("/api/group_price/%d", gp.ID), nil)
	root.Fail("DELETE", apptest.Path("/api/group_price/%d", gp.ID), nil, http.StatusOK, api.MsgGroupPriceNotFound)
	if list := groupPrices(t, root); len(list) != 3 {
		t.Fatalf("after delete: %+v", list)
	}
}

// The relay reads prices through the store helpers: an exact name lookup
// (also on MySQL, whose default collation ignores case) and the group list
// that pricing.Discount takes.
func TestPriceLookupForRelay(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("POST", "/api/model_price/", map[string]any{
		"model_name": "gpt-4o", "input_price": 2.5, "output_price": 10, "enabled": false,
	})
	root.OK("POST", "/api/group_price/", map[string]any{"group_name": "vip", "model_name": "gpt-4o", "discount": 0.5})
	ctx := context.Background()
	st := e.App.Store

	p, err := st.ModelPriceByName(ctx, "gpt-4o")
	if err != nil || p.ModelName != "gpt-4o" || p.Enabled {
		t.Fatalf("ModelPriceByName(gpt-4o) = %+v, %v", p, err)
	}
	for _, name := range []string{"GPT-4O", "gpt-4o ", "gpt", ""} {
		if _, err := st.ModelPriceByName(ctx, name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ModelPriceByName(%q) error = %v, want ErrNotFound", name, err)
		}
	}
	groups, err := st.GroupPrices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	discounts := store.Discounts(groups)
	usage := pricing.Usage{PromptTokens: 1000, CompletionTokens: 500} // 2500 + 5000
	price, err := p.Price()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		group string
		want  int64
	}{{"vip", 3750}, {"svip", 7500}, {"nobody", 7500}} {
		if got := pricing.Quota(price, usage, pricing.Discount(discounts, tt.group, "gpt-4o")); got != tt.want {
			t.Errorf("quota for %s = %d, want %d", tt.group, got, tt.want)
		}
	}
}
