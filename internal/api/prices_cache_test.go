package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/pricing"
)

// cachePrice is a model price with the fields of issue 13 §3.
type cachePrice struct {
	modelPrice
	CacheWritePrice   float64     `json:"cache_write_price"`
	CacheWrite1hPrice float64     `json:"cache_write_1h_price"`
	Tiers             []priceTier `json:"tiers"`
}

type priceTier struct {
	Above             int64   `json:"above_prompt_tokens"`
	InputPrice        float64 `json:"input_price"`
	OutputPrice       float64 `json:"output_price"`
	CachedPrice       float64 `json:"cached_price"`
	CacheWritePrice   float64 `json:"cache_write_price"`
	CacheWrite1hPrice float64 `json:"cache_write_1h_price"`
}

func cachePriceByID(t *testing.T, c *apptest.Client, id int64) cachePrice {
	t.Helper()
	for _, p := range apptest.OKData[[]cachePrice](c, "GET", "/api/model_price/", nil) {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no model price %d", id)
	return cachePrice{}
}

// TestModelPriceCacheAndTiers: the cache-write prices and tiers are stored,
// shown in every answer next to the spec's unchanged fields, and changed
// only when sent.
func TestModelPriceCacheAndTiers(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	tiers := []priceTier{
		{Above: 200_000, InputPrice: 6, OutputPrice: 22.5, CachedPrice: 0.6, CacheWritePrice: 7.5, CacheWrite1hPrice: 12},
		{Above: 500_000, InputPrice: 9},
	}
	var created cachePrice
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "claude", "input_price": 3, "output_price": 15,
		"cached_price": 0.3, "cache_write_price": 3.75, "cache_write_1h_price": 6, "tiers": tiers}).Decode(t, &created)
	want := cachePrice{modelPrice: modelPrice{ID: created.ID, ModelName: "claude", InputPrice: 3, OutputPrice: 15, CachedPrice: 0.3,
		BillingType: "token", Enabled: true, CreatedAt: created.CreatedAt, UpdatedAt: created.UpdatedAt},
		CacheWritePrice: 3.75, CacheWrite1hPrice: 6, Tiers: tiers}
	if !reflect.DeepEqual(created, want) {
		t.Fatalf("created %+v, want %+v", created, want)
	}
	if got := cachePriceByID(t, root, created.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %+v, want %+v", got, want)
	}

	// Without them: 0 and an empty array, never null.
	r := root.OK("POST", "/api/model_price/", map[string]any{"model_name": "plain", "input_price": 1})
	if !strings.Contains(string(r.Data), `"cache_write_price":0,"cache_write_1h_price":0,"tiers":[]`) {
		t.Errorf("plain price: %s", r.Data)
	}

	// Update: only what is sent changes; tiers are replaced whole; [] removes them.
	var got cachePrice
	root.OK("PUT", "/api/model_price/", map[string]any{"id": created.ID, "cache_write_price": 4}).Decode(t, &got)
	want.CacheWritePrice, want.UpdatedAt = 4, got.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after cache_write_price %+v, want %+v", got, want)
	}
	root.OK("PUT", "/api/model_price/", map[string]any{"id": created.ID, "cache_write_1h_price": 0, "tiers": tiers[1:]}).Decode(t, &got)
	want.CacheWrite1hPrice, want.Tiers, want.UpdatedAt = 0, tiers[1:], got.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after tiers %+v, want %+v", got, want)
	}
	root.OK("PUT", "/api/model_price/", map[string]any{"id": created.ID, "input_price": 2.5}).Decode(t, &got)
	if !reflect.DeepEqual(got.Tiers, tiers[1:]) || got.InputPrice != 2.5 {
		t.Fatalf("tiers not sent changed: %+v", got)
	}
	root.OK("PUT", "/api/model_price/", map[string]any{"id": created.ID, "tiers": []any{}}).Decode(t, &got)
	if got.Tiers == nil || len(got.Tiers) != 0 || got.CacheWritePrice != 4 {
		t.Fatalf("tiers [] = %+v", got)
	}
}

// TestModelPriceCacheAndTiersValidation: every new field is validated on
// create and update, and a refused request changes nothing.
func TestModelPriceCacheAndTiersValidation(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var p cachePrice
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "m", "input_price": 1,
		"tiers": []map[string]any{{"above_prompt_tokens": 1000, "input_price": 2}}}).Decode(t, &p)
	tier := func(above any, prices ...any) map[string]any {
		m := map[string]any{"above_prompt_tokens": above}
		for i := 0; i+1 < len(prices); i += 2 {
			m[prices[i].(string)] = prices[i+1]
		}
		return m
	}
	nine := make([]map[string]any, 9)
	for i := range nine {
		nine[i] = tier((i + 1) * 10)
	}
	for _, tt := range []struct {
		name   string
		fields any // the fields under test, as a map or raw JSON text
		msg    string
	}{
		{"negative cache write", map[string]any{"cache_write_price": -1}, pricing.MsgPriceInvalid},
		{"cache write too high", map[string]any{"cache_write_price": 1_000_001}, pricing.MsgPriceInvalid},
		{"negative 1h cache write", map[string]any{"cache_write_1h_price": -0.01}, pricing.MsgPriceInvalid},
		{"1h cache write too high", map[string]any{"cache_write_1h_price": 2e6}, pricing.MsgPriceInvalid},
		{"too many tiers", map[string]any{"tiers": nine}, pricing.MsgTiersTooMany},
		{"tier above 0", map[string]any{"tiers": []any{tier(0)}}, pricing.MsgTierAbove},
		{"tier above negative", map[string]any{"tiers": []any{tier(-1)}}, pricing.MsgTierAbove},
		{"tier above too large", map[string]any{"tiers": []any{tier(100_000_001)}}, pricing.MsgTierAbove},
		{"tier above missing", map[string]any{"tiers": []any{map[string]any{"input_price": 1}}}, pricing.MsgTierAbove},
		{"tiers repeated", map[string]any{"tiers": []any{tier(10), tier(10)}}, pricing.MsgTierOrder},
		{"tiers descending", map[string]any{"tiers": []any{tier(20), tier(10)}}, pricing.MsgTierOrder},
		{"tier negative price", map[string]any{"tiers": []any{tier(10, "output_price", -1)}}, pricing.MsgTierPrice},
		{"tier cache write too high", map[string]any{"tiers": []any{tier(10, "cache_write_1h_price", 1e7)}}, pricing.MsgTierPrice},
		{"tier above fractional", `"tiers":[{"above_prompt_tokens":1.5}]`, specInvalidParams},
		{"tier above as text", `"tiers":[{"above_prompt_tokens":"10"}]`, specInvalidParams},
		{"tiers not an array", `"tiers":{"above_prompt_tokens":10}`, specInvalidParams},
		{"cache write as text", `"cache_write_price":"1"`, specInvalidParams},
	} {
		t.Run(tt.name, func(t *testing.T) {
			create, update := map[string]any{"model_name": "new"}, map[string]any{"id": p.ID}
			if raw, ok := tt.fields.(string); ok {
				root.Fail("POST", "/api/model_price/", `{"model_name":"new",`+raw+`}`, http.StatusOK, tt.msg)
				root.Fail("PUT", "/api/model_price/", `{"id":`+jsonNumber(p.ID)+`,`+raw+`}`, http.StatusOK, tt.msg)
				return
			}
			for k, v := range tt.fields.(map[string]any) {
				create[k], update[k] = v, v
			}
			root.Fail("POST", "/api/model_price/", create, http.StatusOK, tt.msg)
			root.Fail("PUT", "/api/model_price/", update, http.StatusOK, tt.msg)
		})
	}
	list := apptest.OKData[[]cachePrice](root, "GET", "/api/model_price/", nil)
	if len(list) != 1 || list[0].UpdatedAt != p.UpdatedAt || !reflect.DeepEqual(list[0].Tiers, p.Tiers) || list[0].CacheWritePrice != 0 {
		t.Fatalf("refused requests changed the prices: %+v", list)
	}
	// The limits themselves are accepted.
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "limits", "cache_write_price": pricing.MaxPrice,
		"cache_write_1h_price": pricing.MaxPrice, "tiers": append(nine[:7], tier(pricing.MaxTierAbove, "input_price", pricing.MaxPrice))})
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
