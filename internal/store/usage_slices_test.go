package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

func growSlice(s *store.Store, sub int64, rule planlimit.Rule, key string, requests, tokens, least int64) (store.UsageSliceGrant, error) {
	return s.GrowUsageSlice(context.Background(), store.UsageSliceOp{
		UsageOp: store.UsageOp{SubscriptionID: sub, Model: "gpt-4o", Rule: rule, Tokens: least, Now: usageNow},
		HoldKey: key, Requests: requests, SliceTokens: tokens})
}

// A usage slice counts what it got at once, takes beyond its least call
// no more than a fair share of what the tightest limit has left, records
// its calls' real use, and gives back exactly what they did not use —
// when it is returned, and when its process's lease expires.
func TestUsageSliceCountsAndGivesBackExactly(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		owner, janitor := db.open(t, 0), db.open(t, 0)
		if _, err := owner.StartLease(ctx, "owner", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		rule := planlimit.Rule{RequestPeriod: 100, TokenPeriod: 10_000}
		// One lease: a share is half of what is left beyond the least call.
		g, err := growSlice(owner, 41, rule, "", 1000, 1_000_000, 100)
		if err != nil {
			t.Fatal(err)
		}
		if g.Requests != 1+99/2 || g.Tokens != 100+9_900/2 || g.HoldKey == "" {
			t.Fatalf("grant %+v: want 50 requests and 5,050 tokens", g)
		}
		if r, tok, _ := usageOf(t, owner, 41, usageNow); r != 50 || tok != 5_050 {
			t.Fatalf("counted %d requests, %d tokens: the slice counts at once", r, tok)
		}
		// Growing the same slice adds to its row.
		g2, err := growSlice(owner, 41, rule, g.HoldKey, 10, 100, 10)
		if err != nil || g2.HoldKey != g.HoldKey || g2.Requests != 10 || g2.Tokens != 100 {
			t.Fatalf("grow %+v, %v", g2, err)
		}
		// Three calls settle against it: 3 requests, 700 real tokens.
		settle := func(tokens int64, key string) store.SettleOp {
			return store.SettleOp{Key: key, Usage: &store.UsageSettle{HoldKey: g.HoldKey, Slice: true, SubscriptionID: 41,
				Model: "gpt-4o", BucketStart: g.BucketStart, Tokens: tokens}}
		}
		if _, err := owner.ApplyBilling(ctx, nil, []store.SettleOp{settle(100, "a"), settle(200, "b")}); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.ApplyBilling(ctx, nil, []store.SettleOp{settle(400, "c")}); err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, owner, 41, usageNow); r != 60 || tok != 5_150 {
			t.Fatalf("after the calls the counters show %d requests, %d tokens: the slice still counts its grant", r, tok)
		}
		// The process dies; its slice comes back with its lease, less what
		// its calls used.
		time.Sleep(400 * time.Millisecond)
		if _, holds, err := janitor.ReleaseExpiredLeases(ctx); err != nil || holds != 1 {
			t.Fatalf("janitor: %d holds, %v", holds, err)
		}
		if r, tok, life := usageOf(t, janitor, 41, usageNow); r != 3 || tok != 700 || life != 700 {
			t.Fatalf("after the lease expired: %d requests, %d tokens, %d lifetime; want the calls' 3, 700, 700", r, tok, life)
		}
		// A late call of the gone slice counts as a whole use.
		if _, err := owner.ApplyBilling(ctx, nil, []store.SettleOp{settle(50, "d")}); err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, janitor, 41, usageNow); r != 4 || tok != 750 {
			t.Fatalf("after a late call: %d requests, %d tokens; want 4 and 750", r, tok)
		}
	})
}

// A slice returned on purpose gives back the same, once; a slice is
// refused when not even its least call fits.
func TestUsageSliceReturnAndRefusal(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		rule := planlimit.Rule{RequestPeriod: 4}
		g, err := growSlice(s, 42, rule, "", 100, 100, 10)
		if err != nil || g.Requests != 1+3/2 {
			t.Fatalf("grant %+v, %v", g, err)
		}
		end := store.SettleOp{Usage: &store.UsageSettle{HoldKey: g.HoldKey, Slice: true, Release: true, SubscriptionID: 42, Model: "gpt-4o", BucketStart: g.BucketStart}}
		use := store.SettleOp{Key: "u", Usage: &store.UsageSettle{HoldKey: g.HoldKey, Slice: true, SubscriptionID: 42, Model: "gpt-4o", BucketStart: g.BucketStart, Tokens: 30}}
		if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{use, end, end}); err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, s, 42, usageNow); r != 1 || tok != 30 {
			t.Fatalf("after the return: %d requests, %d tokens; want the one call's 1 and 30", r, tok)
		}
		for range 3 {
			if _, err := growSlice(s, 42, rule, "", 1, 10, 10); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := growSlice(s, 42, rule, "", 1, 10, 10); limitOf(t, err).Name != "request_period" {
			t.Fatalf("a fifth request of a limit of 4: %v", err)
		}
	})
}
