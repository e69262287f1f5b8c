package store

import (
	"context"
	"slices"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// SubscriptionUsage is what a subscription has used: its lifetime totals
// and, per model, the usage of each window and every configured limit.
type SubscriptionUsage struct {
	LifetimeRequests, LifetimeTokens int64
	Models                           []ModelUsage // sorted by model
}

// ModelUsage is one model's usage in each window and the status of each
// limit its rule configures.
type ModelUsage struct {
	Model  string
	Usage  planlimit.Usage
	Limits []planlimit.Status
}

// UsageOf reports a subscription's usage at now: every model of rules (the
// plan's model_limits) and every other model with usage in the month
// window (its limits then empty: a model the plan no longer lists). It
// reads a month of buckets per model; it is for the usage routes, not the
// hot path.
func (s *Store) UsageOf(ctx context.Context, subscriptionID int64, rules map[string]planlimit.Rule, now time.Time) (SubscriptionUsage, error) {
	var out SubscriptionUsage
	db := s.read(ctx)
	var totals []struct{ Requests, Tokens int64 }
	if err := db.Table("plan_usage_totals").Select("requests, tokens").Where("subscription_id = ?", subscriptionID).Find(&totals).Error; err != nil {
		return out, wrap("read plan usage", err)
	}
	if len(totals) > 0 {
		out.LifetimeRequests, out.LifetimeTokens = totals[0].Requests, totals[0].Tokens
	}
	var rows []v9PlanUsage
	err := db.Where("subscription_id = ? AND bucket_start >= ? AND bucket_start <= ?",
		subscriptionID, planlimit.PruneBefore(now), now.Unix()).Find(&rows).Error
	if err != nil {
		return out, wrap("read plan usage", err)
	}
	buckets := map[string][]planlimit.Bucket{}
	for model := range rules {
		buckets[model] = nil
	}
	for _, r := range rows {
		buckets[r.Model] = append(buckets[r.Model], r.bucket())
	}
	for model, bs := range buckets {
		rule, listed := rules[model]
		u := planlimit.Tally(rule, bs, now)
		u.LifetimeTokens = out.LifetimeTokens
		m := ModelUsage{Model: model, Usage: u}
		if listed {
			m.Limits = planlimit.Report(rule, u)
		}
		out.Models = append(out.Models, m)
	}
	slices.SortFunc(out.Models, func(a, b ModelUsage) int {
		switch {
		case a.Model < b.Model:
			return -1
		case a.Model > b.Model:
			return 1
		}
		return 0
	})
	return out, nil
}

// PruneUsage deletes up to limit usage buckets that no window counts any
// more at now, keeping one coarse bucket more than the month window as a
// margin for nodes whose clocks differ a little. Pruning is not a counter
// change: each node (or the one janitor) prunes by the clock alone. It returns how many rows it
// deleted; a janitor calls it until that is below limit.
func (s *Store) PruneUsage(ctx context.Context, now time.Time, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	cutoff := planlimit.PruneBefore(now) - int64(planlimit.CoarseBucket/time.Second)
	var q string
	switch s.dialect {
	case MySQL:
		q = "DELETE FROM plan_usage WHERE bucket_start < ? ORDER BY bucket_start LIMIT ?"
	case Postgres:
		q = "DELETE FROM plan_usage WHERE ctid IN (SELECT ctid FROM plan_usage WHERE bucket_start < ? ORDER BY bucket_start LIMIT ?)"
	default:
		q = "DELETE FROM plan_usage WHERE rowid IN (SELECT rowid FROM plan_usage WHERE bucket_start < ? ORDER BY bucket_start LIMIT ?)"
	}
	var n int64
	err := s.write(ctx, "prune plan usage", func(tx *Tx) error {
		res := tx.db.Exec(q, cutoff, limit)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
