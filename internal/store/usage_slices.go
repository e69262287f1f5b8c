package store

import (
	"context"
	"fmt"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// Plan usage slices: what balance slices are to money (billing's
// sliceBook), for a subscription's limits of one model on a shared server
// database. A node counts a slice of requests and tokens into the usage
// counters at once, as one hold (plan_usage_holds, under its billing
// lease), decides its calls against the slice in memory, and records
// their real use in the hold's row in the ledger's group commits; giving
// the slice back takes out what it counted beyond that use
// (docs/decisions/balance-slices.md).

// UsageSliceOp asks for a slice of a subscription's limits of a model: at
// least one call of Tokens (UsageOp, which the limits must fit, as
// ReserveUsage decides it), and as much as Requests and SliceTokens,
// capped at a fair share of what the tightest limit has left. HoldKey is
// the slice to grow; when it is gone or of an older fine bucket, a new one
// is made.
type UsageSliceOp struct {
	UsageOp
	HoldKey               string
	Requests, SliceTokens int64
}

// UsageSliceGrant is what a slice got: its hold, the fine bucket it
// counts in, the requests and tokens added, and the decision for the
// least call, of LeastTokens (the rate-limit headers start from it; for
// an op with MinTokens, what planlimit.Fit gives it).
type UsageSliceGrant struct {
	HoldKey          string
	BucketStart      int64
	Requests, Tokens int64
	LeastTokens      int64
	Decision         planlimit.Decision
}

// GrowUsageSlice counts a slice into the usage counters, or refuses with
// a *UsageLimitError when not even the least call fits.
func (s *Store) GrowUsageSlice(ctx context.Context, op UsageSliceOp) (UsageSliceGrant, error) {
	if err := validUsageOp(op.UsageOp); err != nil {
		return UsageSliceGrant{}, fmt.Errorf("grow plan usage slice: %w", err)
	}
	var g UsageSliceGrant
	err := s.writeUsage(ctx, "grow plan usage slice", op.SubscriptionID, func(tx *Tx) error {
		var err error
		g, err = tx.growUsageSlice(op)
		return err
	})
	return g, err
}

func (tx *Tx) growUsageSlice(op UsageSliceOp) (UsageSliceGrant, error) {
	var totals []struct{ Tokens int64 }
	err := tx.forUpdate().Table("plan_usage_totals").Select("tokens").Where("subscription_id = ?", op.SubscriptionID).Find(&totals).Error
	if err != nil {
		return UsageSliceGrant{}, err
	}
	if len(totals) == 0 {
		return UsageSliceGrant{}, errNoTotals
	}
	usage, err := tx.windowUsage(op.UsageOp)
	if err != nil {
		return UsageSliceGrant{}, err
	}
	usage.LifetimeTokens = totals[0].Tokens
	least := op.fit(usage)
	d := planlimit.Check(op.Rule, usage, least, op.Now)
	if !d.Fits {
		return UsageSliceGrant{}, &UsageLimitError{Limit: d.Binding}
	}
	requestsLeft, tokensLeft := int64(planlimit.MaxAmount), int64(planlimit.MaxAmount)
	for _, st := range planlimit.Report(op.Rule, usage) {
		if st.Measure == planlimit.Tokens {
			tokensLeft = min(tokensLeft, st.Remaining)
		} else {
			requestsLeft = min(requestsLeft, st.Remaining)
		}
	}
	share := tx.s.FairShare()
	g := UsageSliceGrant{BucketStart: planlimit.BucketStart(op.Now, planlimit.FineBucket), Decision: d, LeastTokens: least,
		Requests: fairPart(max(op.Requests, 1), 1, requestsLeft, share),
		Tokens:   fairPart(max(op.SliceTokens, least), least, tokensLeft, share)}
	if err := tx.addUsage(usageDelta{op.SubscriptionID, op.Model, g.BucketStart, g.Requests, g.Tokens}, usageDelta{}); err != nil {
		return g, err
	}
	if op.HoldKey != "" {
		res := tx.db.Exec("UPDATE plan_usage_holds SET requests = requests + ?, tokens = tokens + ? WHERE hold_key = ? AND bucket_start = ?",
			g.Requests, g.Tokens, op.HoldKey, g.BucketStart)
		if res.Error != nil {
			return g, res.Error
		}
		if res.RowsAffected == 1 {
			g.HoldKey = op.HoldKey
			return g, nil
		}
	}
	g.HoldKey = newHoldKey()
	return g, tx.db.Create(&planUsageHold{HoldKey: g.HoldKey, SubscriptionID: op.SubscriptionID, Model: op.Model,
		BucketStart: g.BucketStart, Tokens: g.Tokens, Requests: g.Requests, CreatedAt: op.Now.Unix(), LeaseID: tx.s.LeaseID()}).Error
}

// fairPart is what a slice gets of a limit with left remaining: what it
// wants, but beyond the least it needs no more than 1/share of the rest.
func fairPart(want, least, left, share int64) int64 {
	return min(want, least+max(left-least, 0)/max(share, 1), left, planlimit.MaxAmount)
}

// sliceUses counts the uses of calls served from usage slices in their
// slices' rows: one update per slice. It returns the slices that are gone
// (given back by the janitor after a stall): their calls count as whole
// uses instead. The uses reach peers now, as settled calls' uses do.
func (tx *Tx) sliceUses(ops []SettleOp) (gone map[string]bool, err error) {
	type use struct {
		u                *UsageSettle
		requests, tokens int64
	}
	uses := map[string]*use{}
	var keys []string
	for i := range ops {
		u := ops[i].Usage
		if u == nil || !u.Slice || u.Release {
			continue
		}
		s := uses[u.HoldKey]
		if s == nil {
			s = &use{u: u}
			uses[u.HoldKey] = s
			keys = append(keys, u.HoldKey)
		}
		s.requests = min(s.requests+1, planlimit.MaxAmount)
		s.tokens = min(s.tokens+min(max(u.Tokens, 0), planlimit.MaxAmount), planlimit.MaxAmount)
	}
	for _, k := range keys {
		s := uses[k]
		res := tx.db.Exec("UPDATE plan_usage_holds SET used_requests = "+clampedAdd("used_requests")+", used_tokens = "+clampedAdd("used_tokens")+
			" WHERE hold_key = ?", s.requests, s.requests, s.requests, s.tokens, s.tokens, s.tokens, k)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[k] = true
			continue
		}
		fine := planlimit.BucketStart(time.Unix(s.u.BucketStart, 0), planlimit.FineBucket)
		c := Change{Table: "plan_usage", Op: "UPDATE", ID: s.u.SubscriptionID, Counters: true,
			usage: &usageDelta{s.u.SubscriptionID, s.u.Model, fine, s.requests, s.tokens}}
		if err := tx.record(c); err != nil {
			return nil, err
		}
	}
	return gone, nil
}
