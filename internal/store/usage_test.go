package store_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// usageNow is the fake clock's start: 3 minutes into a bucket.
var usageNow = time.Date(2026, 11, 2, 10, 3, 0, 0, time.UTC)

func reserveUsage(s *store.Store, sub int64, rule planlimit.Rule, tokens int64, now time.Time) (store.UsageReservation, error) {
	return s.ReserveUsage(context.Background(), store.UsageOp{SubscriptionID: sub, Model: "gpt-4o", Rule: rule, Tokens: tokens, Now: now})
}

// usageOf is the subscription's use of gpt-4o in the period window and
// its lifetime tokens.
func usageOf(t *testing.T, s *store.Store, sub int64, now time.Time) (requests, tokens, lifetime int64) {
	t.Helper()
	u, err := s.UsageOf(context.Background(), sub, map[string]planlimit.Rule{"gpt-4o": {}}, now)
	if err != nil {
		t.Fatal(err)
	}
	c := u.Models[0].Usage.Windows[planlimit.Period]
	return c.Requests, c.Tokens, u.LifetimeTokens
}

func limitOf(t *testing.T, err error) planlimit.Status {
	t.Helper()
	var le *store.UsageLimitError
	if !errors.Is(err, store.ErrUsageLimit) || !errors.As(err, &le) {
		t.Fatalf("want a usage limit error, got %v", err)
	}
	return le.Limit
}

// Limits are atomic: 30 parallel reservations against request_period 10
// (or token_week 1000 with estimates of 100), from two handles on one
// database (two nodes), on a subscription without a counter row yet,
// serve exactly 10.
func TestParallelUsageReservationsServeExactlyTheLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		nodes := []*store.Store{db.open(t, 0), db.open(t, 1)}
		for sub, rule := range map[int64]planlimit.Rule{7: {RequestPeriod: 10}, 8: {TokenWeek: 1000}} {
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 30 {
				wg.Go(func() {
					_, err := reserveUsage(nodes[i%2], sub, rule, 100, usageNow)
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, store.ErrUsageLimit):
						refused.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if ok.Load() != 10 || refused.Load() != 20 {
				t.Fatalf("%+v: served %d, refused %d; want 10 and 20", rule, ok.Load(), refused.Load())
			}
			if r, tok, life := usageOf(t, nodes[0], sub, usageNow); r != 10 || tok != 1000 || life != 1000 {
				t.Fatalf("%+v: usage %d requests, %d tokens, %d lifetime; want 10, 1000, 1000", rule, r, tok, life)
			}
		}
	})
}

func TestUsageSettleAndReleaseApplyOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		rule := planlimit.Rule{TokenPeriod: 1000}
		big, err := reserveUsage(s, 1, rule, 800, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		if d := big.Decision; d.Tokens == nil || d.Tokens.Remaining != 200 || d.Requests != nil {
			t.Fatalf("decision %+v", d)
		}
		lim := limitOf(t, func() error { _, err := reserveUsage(s, 1, rule, 300, usageNow); return err }())
		if lim.Name != planlimit.NameTokenPeriod || lim.Used != 800 || lim.Remaining != 200 ||
			!lim.Reset.Equal(rule.ResetAt(planlimit.Period, planlimit.BucketStart(usageNow, planlimit.FineBucket))) {
			t.Fatalf("binding %+v", lim)
		}
		// The real count was lower: settling gives the rest back, so the
		// refused call fits now.
		for i, want := range []bool{true, false} {
			applied, err := s.SettleUsage(ctx, big, 100)
			if err != nil || applied != want {
				t.Fatalf("settlement %d: applied %v, %v", i+1, applied, err)
			}
		}
		if applied, err := s.ReleaseUsage(ctx, big); err != nil || applied {
			t.Fatalf("release after settlement: applied %v, %v", applied, err)
		}
		if r, tok, life := usageOf(t, s, 1, usageNow); r != 1 || tok != 100 || life != 100 {
			t.Fatalf("after settling: %d requests, %d tokens, %d lifetime; want 1, 100, 100", r, tok, life)
		}
		mid, err := reserveUsage(s, 1, rule, 300, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		// A call that failed upstream gives its whole reservation back, once.
		for i, want := range []bool{true, false} {
			applied, err := s.ReleaseUsage(ctx, mid)
			if err != nil || applied != want {
				t.Fatalf("release %d: applied %v, %v", i+1, applied, err)
			}
		}
		if applied, err := s.SettleUsage(ctx, mid, 5); err != nil || applied {
			t.Fatalf("settlement after release: applied %v, %v", applied, err)
		}
		if r, tok, life := usageOf(t, s, 1, usageNow); r != 1 || tok != 100 || life != 100 {
			t.Fatalf("after release: %d requests, %d tokens, %d lifetime; want 1, 100, 100", r, tok, life)
		}
		// An overrun settles above the limit; the next call is refused.
		over, err := reserveUsage(s, 1, rule, 900, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleUsage(ctx, over, 1500); err != nil {
			t.Fatal(err)
		}
		if lim := limitOf(t, func() error { _, err := reserveUsage(s, 1, rule, 0, usageNow); return err }()); lim.Used != 1600 || lim.Remaining != 0 {
			t.Fatalf("after an overrun: %+v", lim)
		}
	})
}

// The windows roll with the injected clock: a limit frees when the bucket
// holding its oldest use leaves the window, not before.
func TestUsageWindowsRollWithTheClock(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		s := db.open(t, 0)
		rule := planlimit.Rule{PeriodHours: 1, RequestPeriod: 2, TokenWeek: 100}
		first := usageNow
		second := usageNow.Add(30 * time.Minute)
		for _, at := range []time.Time{first, second} {
			if _, err := reserveUsage(s, 3, rule, 10, at); err != nil {
				t.Fatal(err)
			}
		}
		reset := rule.ResetAt(planlimit.Period, planlimit.BucketStart(first, planlimit.FineBucket))
		for _, at := range []time.Time{second, first.Add(time.Hour), reset.Add(-time.Second)} {
			lim := limitOf(t, func() error { _, err := reserveUsage(s, 3, rule, 10, at); return err }())
			if lim.Name != planlimit.NameRequestPeriod || !lim.Reset.Equal(reset) {
				t.Fatalf("at %v: binding %+v, want request_period freeing at %v", at, lim, reset)
			}
		}
		if _, err := reserveUsage(s, 3, rule, 70, reset); err != nil {
			t.Fatalf("at the reset time: %v", err)
		}
		// The week window still holds all 90 tokens.
		lim := limitOf(t, func() error { _, err := reserveUsage(s, 3, rule, 11, reset.Add(2*time.Hour)); return err }())
		weekReset := rule.ResetAt(planlimit.Week, planlimit.BucketStart(first, planlimit.CoarseBucket))
		if lim.Name != planlimit.NameTokenWeek || lim.Used != 90 || !lim.Reset.Equal(weekReset) {
			t.Fatalf("binding %+v, want token_week with 90 used freeing at %v", lim, weekReset)
		}
		if _, err := reserveUsage(s, 3, rule, 11, weekReset); err != nil {
			t.Fatalf("after a week: %v", err)
		}
		u, err := s.UsageOf(context.Background(), 3, map[string]planlimit.Rule{"gpt-4o": rule, "o3": {RequestMonth: 5}}, weekReset)
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Models) != 2 || u.Models[0].Model != "gpt-4o" || u.Models[1].Model != "o3" || u.LifetimeTokens != 101 || u.LifetimeRequests != 4 {
			t.Fatalf("usage %+v", u)
		}
		if got := u.Models[0].Usage.Windows[planlimit.Month]; got.Requests != 4 || got.Tokens != 101 {
			t.Fatalf("month window %+v", got)
		}
		if len(u.Models[0].Limits) != 2 || len(u.Models[1].Limits) != 1 || u.Models[1].Limits[0].Used != 0 {
			t.Fatalf("limits %+v", u.Models)
		}
	})
}

// The lifetime allowance counts every model of the subscription, and
// never frees.
func TestUsageLifetimeAllowanceSpansModels(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		rule := planlimit.Rule{LifetimeTokens: 100}
		if _, err := s.ReserveUsage(ctx, store.UsageOp{SubscriptionID: 9, Model: "a", Rule: rule, Tokens: 60, Now: usageNow}); err != nil {
			t.Fatal(err)
		}
		later := usageNow.Add(60 * 24 * time.Hour)
		_, err := s.ReserveUsage(ctx, store.UsageOp{SubscriptionID: 9, Model: "b", Rule: rule, Tokens: 41, Now: later})
		if lim := limitOf(t, err); lim.Name != planlimit.NameLifetimeTokens || lim.Used != 60 || !lim.Reset.IsZero() {
			t.Fatalf("binding %+v", lim)
		}
		if _, err := s.ReserveUsage(ctx, store.UsageOp{SubscriptionID: 9, Model: "b", Rule: rule, Tokens: 40, Now: later}); err != nil {
			t.Fatal(err)
		}
	})
}

// Bad input is refused with a clear error and changes nothing; counters
// saturate instead of overflowing.
func TestUsageInputsAtTheLimits(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		bad := []store.UsageOp{
			{SubscriptionID: 1, Model: "m", Tokens: -1, Now: usageNow},
			{SubscriptionID: 1, Model: "m", Tokens: math.MaxInt64, Now: usageNow},
			{SubscriptionID: 1, Model: "m", Tokens: planlimit.MaxAmount + 1, Now: usageNow},
			{SubscriptionID: 1, Model: "m", Rule: planlimit.Rule{RequestPeriod: -1}, Now: usageNow},
			{SubscriptionID: 1, Model: "m", Rule: planlimit.Rule{TokenMonth: math.MaxInt64}, Now: usageNow},
			{SubscriptionID: 1, Model: "m", Rule: planlimit.Rule{PeriodHours: math.MinInt64}, Now: usageNow},
			{SubscriptionID: 0, Model: "m", Now: usageNow},
			{SubscriptionID: -1, Model: "m", Now: usageNow},
			{SubscriptionID: 1, Model: "", Now: usageNow},
			{SubscriptionID: 1, Model: "a\x00b", Now: usageNow},
			{SubscriptionID: 1, Model: "\xff\xfe", Now: usageNow},
			{SubscriptionID: 1, Model: string(make([]byte, 192)), Now: usageNow},
			{SubscriptionID: 1, Model: "m"},
		}
		for _, op := range bad {
			if _, err := s.ReserveUsage(ctx, op); !errors.Is(err, planlimit.ErrInvalid) {
				t.Fatalf("%+v: %v", op, err)
			}
		}
		u, err := s.UsageOf(ctx, 1, nil, usageNow)
		if err != nil || len(u.Models) != 0 || u.LifetimeRequests != 0 {
			t.Fatalf("refused input left usage: %+v, %v", u, err)
		}
		// The largest estimate fits where nothing limits tokens; a real
		// count beyond MaxAmount is refused, and the counters saturate.
		huge := planlimit.Rule{RequestPeriod: 5}
		var holds []store.UsageReservation
		for range 3 {
			r, err := s.ReserveUsage(ctx, store.UsageOp{SubscriptionID: 1, Model: "m", Rule: huge, Tokens: planlimit.MaxAmount, Now: usageNow})
			if err != nil {
				t.Fatal(err)
			}
			holds = append(holds, r)
		}
		if _, err := s.SettleUsage(ctx, holds[0], -1); !errors.Is(err, planlimit.ErrInvalid) {
			t.Fatalf("negative real count: %v", err)
		}
		if _, err := s.SettleUsage(ctx, holds[0], math.MaxInt64); !errors.Is(err, planlimit.ErrInvalid) {
			t.Fatalf("real count beyond the limit: %v", err)
		}
		u, err = s.UsageOf(ctx, 1, nil, usageNow)
		if err != nil || u.LifetimeTokens != planlimit.MaxAmount || u.Models[0].Usage.Windows[planlimit.Period].Tokens != planlimit.MaxAmount {
			t.Fatalf("saturated counters: %+v, %v", u, err)
		}
		// Releasing one saturated hold never drives a counter below 0.
		for _, h := range holds {
			if _, err := s.ReleaseUsage(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		if r, tok, life := usageOf(t, s, 1, usageNow); r != 0 || tok != 0 || life != 0 {
			t.Fatalf("after releasing all: %d, %d, %d", r, tok, life)
		}
	})
}

func TestUsagePruneAndStaleHolds(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		rule := planlimit.Rule{RequestMonth: 100}
		// Five buckets an hour apart, two of them released at once.
		for i := range 5 {
			r, err := reserveUsage(s, 4, rule, 10, usageNow.Add(time.Duration(i)*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if i < 2 {
				if _, err := s.SettleUsage(ctx, r, 10); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Three holds are still open; those older than 3h30 are released.
		n, err := s.ReleaseStaleUsageHolds(ctx, usageNow.Add(3*time.Hour+30*time.Minute), 10)
		if err != nil || n != 2 {
			t.Fatalf("released %d stale holds, %v; want 2", n, err)
		}
		// 30 days and 6 hours later the buckets before 12:00 (fine 10:00
		// and 11:00, coarse 09:00) are gone, in batches of two.
		now := usageNow.Add(planlimit.MonthLength + 6*time.Hour)
		var pruned []int64
		for {
			k, err := s.PruneUsage(ctx, now, 2)
			if err != nil {
				t.Fatal(err)
			}
			pruned = append(pruned, k)
			if k < 2 {
				break
			}
		}
		if len(pruned) != 2 || pruned[0] != 2 || pruned[1] != 1 {
			t.Fatalf("pruned %v, want [2 1]", pruned)
		}
		u, err := s.UsageOf(ctx, 4, nil, usageNow.Add(5*time.Hour))
		if err != nil || u.Models[0].Usage.Windows[planlimit.Month].Requests != 1 {
			t.Fatalf("kept %+v, %v", u, err)
		}
	})
}

// Settlements and releases of one reservation racing on two nodes: exactly
// one applies.
func TestParallelSettlementsOfOneReservationApplyOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		nodes := []*store.Store{db.open(t, 0), db.open(t, 1)}
		r, err := reserveUsage(nodes[0], 5, planlimit.Rule{TokenPeriod: 10_000}, 1000, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		var applied atomic.Int64
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				var ok bool
				var err error
				if i%4 == 0 {
					ok, err = nodes[i%2].ReleaseUsage(ctx, r)
				} else {
					ok, err = nodes[i%2].SettleUsage(ctx, r, 400)
				}
				if err != nil {
					t.Error(err)
				}
				if ok {
					applied.Add(1)
				}
			})
		}
		wg.Wait()
		req, tok, life := usageOf(t, nodes[0], 5, usageNow)
		if applied.Load() != 1 || !(req == 1 && tok == 400 && life == 400 || req == 0 && tok == 0 && life == 0) {
			t.Fatalf("applied %d times; usage %d requests, %d tokens, %d lifetime", applied.Load(), req, tok, life)
		}
	})
}
