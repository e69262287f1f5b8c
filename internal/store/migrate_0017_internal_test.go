package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A database at 0016 with a model price and a log gets the cache and tier
// columns: the old price reads with cache-write prices 0 and no tiers, so
// it bills as before; the old log reads with no cache writes; running the
// step again (MySQL commits DDL as it goes) changes nothing.
func TestMigration0017UpgradesExistingPrices(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "m.db")}
			// Stop before 0017, wherever later steps put it in the list.
			all := migrations
			i := slices.IndexFunc(all, func(m migration) bool { return m.version == "0017_cache_tier_pricing" })
			if i < 1 || all[i-1].version != "0016_cluster_failed_events" {
				t.Fatalf("0017 is step %d of %d, not right after 0016", i, len(all))
			}
			migrations = all[:i]
			s, err := Open(ctx, opts)
			migrations = all
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				"INSERT INTO model_prices (id, model_name, input_price, output_price, cached_price, per_request_price, billing_type, enabled) VALUES (1, 'old', 2, 8, 0.5, 0, 'token', true)",
				"INSERT INTO logs (id, user_id, created_at, type, content, quota, prompt_tokens, cached_tokens) VALUES (1, 7, 100, 2, 'old', 5, 100, 40)",
			} {
				if err := s.db.Exec(q).Error; err != nil {
					t.Fatal(err)
				}
			}
			s.Close()

			s, err = Open(ctx, opts)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			defer s.Close()
			p, err := s.ModelPriceByName(ctx, "old")
			if err != nil {
				t.Fatal(err)
			}
			price, err := p.Price()
			if err != nil || p.CacheWritePrice != 0 || p.CacheWrite1hPrice != 0 || p.Tiers != "" || price.Tiers != nil {
				t.Fatalf("old price after the upgrade: %+v, %v", p, err)
			}
			// 60×2 + 40×0.5 + 10×8, as before the upgrade.
			if got := pricing.Quota(price, pricing.Usage{PromptTokens: 100, CachedTokens: 40, CompletionTokens: 10}, 1); got != 220 {
				t.Fatalf("old price bills %d, want 220", got)
			}
			logs, total, err := s.ListLogs(ctx, LogFilter{UserID: 7}, Page{Limit: 10})
			if err != nil || total != 1 || logs[0].CacheWriteTokens != 0 || logs[0].CacheWrite1hTokens != 0 || logs[0].CachedTokens != 40 {
				t.Fatalf("old log after the upgrade: %+v, %d, %v", logs, total, err)
			}
			if err := migration0017(s.db); err != nil {
				t.Fatalf("step run again: %v", err)
			}
		})
	}
}
