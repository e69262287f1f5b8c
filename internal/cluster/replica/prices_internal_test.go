package replica

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// The cache-write prices, the tiers and the logs' cache-write counts
// (migration 0017) travel in replicated rows like every other column: the
// generic row encoding carries them and a receiver reads them back as they
// were.
func TestReplicatedCacheAndTierColumns(t *testing.T) {
	price := store.ModelPrice{ID: 51, ModelName: "m", InputPrice: 3, CacheWritePrice: 3.75, CacheWrite1hPrice: 6,
		Tiers:       `[{"above_prompt_tokens":1000,"input_price":6,"output_price":22.5,"cached_price":0,"cache_write_price":0,"cache_write_1h_price":12}]`,
		BillingType: "token", Enabled: true}
	log := store.Log{ID: 52, UserID: 1, Type: store.LogConsume, PromptTokens: 100, CachedTokens: 10, CacheWriteTokens: 20, CacheWrite1hTokens: 30}
	for _, tc := range []struct {
		table   string
		row     any
		into    any
		columns []string
	}{
		{"model_prices", &price, &store.ModelPrice{}, []string{`"cache_write_price":3.75`, `"cache_write_1h_price":6`, `"tiers":"[{`}},
		{"logs", &log, &store.Log{}, []string{`"cache_write_tokens":20`, `"cache_write_1h_tokens":30`}},
	} {
		tbl := replicatedTable(tc.table)
		data, err := tbl.encodeRow(tc.row, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tc.columns {
			if !strings.Contains(string(data), c) {
				t.Errorf("%s event lacks %s: %s", tc.table, c, data)
			}
		}
		cols, err := tbl.decodeRow(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.fill(tc.into, cols); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tc.into, tc.row) {
			t.Errorf("%s read back as %+v, want %+v", tc.table, tc.into, tc.row)
		}
	}
}
