package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// UsageSettle is the plan usage of a plan-billed call's settlement
// (SettleOp.Usage): the billing ledger applies it in the same group commit
// as the call's consume log, under the same settlement key, so it counts
// exactly once (docs/decisions/plan-limits.md).
//
// With a HoldKey (a reservation made in the database by ReserveUsage: the
// shared server databases) it closes that hold: a release subtracts the
// reservation, a settlement adds Tokens minus its estimate; when the hold
// is gone already (the janitor released it, or parking a dead letter did)
// a settlement adds the whole use, one request and Tokens, to the bucket
// starting at BucketStart, and a release does nothing. Without a HoldKey
// (SQLite: the reservation was held in memory, nothing was written) a
// settlement adds the whole use.
type UsageSettle struct {
	HoldKey        string `json:",omitempty"`
	SubscriptionID int64
	Model          string
	BucketStart    int64
	Tokens         int64 // the real count: prompt + completion
	Release        bool  `json:",omitempty"`
	// Slice says HoldKey is a usage slice (GrowUsageSlice) the call was
	// served from: its use is counted in the slice's row, which stays
	// open; with Release, the slice itself is given back.
	Slice bool `json:",omitempty"`
}

// settleUsage applies the usage of ops. Whole uses are summed per
// subscription, model and bucket first, so a batch of calls on one
// subscription costs one upsert of each counter.
func (tx *Tx) settleUsage(ops []SettleOp) error {
	type bucketKey struct {
		sub   int64
		model string
		fine  int64
	}
	sums := map[bucketKey]*usageDelta{}
	gone, err := tx.sliceUses(ops)
	if err != nil {
		return err
	}
	for i := range ops {
		u := ops[i].Usage
		if u == nil {
			continue
		}
		if u.Slice && !u.Release && !gone[u.HoldKey] {
			continue // counted in its slice by sliceUses
		}
		if u.Slice && !u.Release {
			// Its slice is gone (given back by the janitor): a whole use.
			u = &UsageSettle{SubscriptionID: u.SubscriptionID, Model: u.Model, BucketStart: u.BucketStart, Tokens: u.Tokens}
		}
		if u.HoldKey != "" {
			applied, err := tx.closeUsage(u.HoldKey, u.Release, u.Tokens)
			if err != nil {
				return err
			}
			if applied {
				continue
			}
		}
		if u.Release {
			continue
		}
		k := bucketKey{u.SubscriptionID, u.Model, planlimit.BucketStart(time.Unix(u.BucketStart, 0), planlimit.FineBucket)}
		d := sums[k]
		if d == nil {
			d = &usageDelta{subscriptionID: k.sub, model: k.model, fine: k.fine}
			sums[k] = d
		}
		d.requests = min(d.requests+1, planlimit.MaxAmount)
		d.tokens = min(d.tokens+min(max(u.Tokens, 0), planlimit.MaxAmount), planlimit.MaxAmount)
	}
	deltas := make([]*usageDelta, 0, len(sums))
	for _, d := range sums {
		deltas = append(deltas, d)
	}
	// The lock order of every usage writer: subscriptions in id order.
	slices.SortFunc(deltas, func(a, b *usageDelta) int {
		return cmp.Or(cmp.Compare(a.subscriptionID, b.subscriptionID), strings.Compare(a.model, b.model), cmp.Compare(a.fine, b.fine))
	})
	for _, d := range deltas {
		if err := tx.addUsage(*d, *d); err != nil {
			return err
		}
	}
	return nil
}

// UsageCounts is what the relay's in-memory usage book (billing, SQLite)
// loads before it first decides for a subscription and model: the buckets
// of the last month and the subscription's lifetime tokens.
type UsageCounts struct {
	Buckets        []planlimit.Bucket // oldest first
	LifetimeTokens int64
}

// UsageCountsOf reads the buckets of subscriptionID's use of model that a
// window can still count at now, and the subscription's lifetime tokens.
func (s *Store) UsageCountsOf(ctx context.Context, subscriptionID int64, model string, now time.Time) (UsageCounts, error) {
	var out UsageCounts
	db := s.read(ctx)
	var totals []struct{ Tokens int64 }
	if err := db.Table("plan_usage_totals").Select("tokens").Where("subscription_id = ?", subscriptionID).Find(&totals).Error; err != nil {
		return out, wrap("read plan usage", err)
	}
	if len(totals) > 0 {
		out.LifetimeTokens = totals[0].Tokens
	}
	var rows []v9PlanUsage
	err := db.Where("subscription_id = ? AND model = ? AND bucket_start >= ?", subscriptionID, model, planlimit.PruneBefore(now)).
		Order("bucket_start, span").Find(&rows).Error
	if err != nil {
		return out, wrap("read plan usage", err)
	}
	for _, r := range rows {
		out.Buckets = append(out.Buckets, r.bucket())
	}
	return out, nil
}

// bucket is the row as the pure rules count it.
func (r v9PlanUsage) bucket() planlimit.Bucket {
	return planlimit.Bucket{Width: time.Duration(r.Span) * time.Second, Start: r.BucketStart, Requests: r.Requests, Tokens: r.Tokens}
}
