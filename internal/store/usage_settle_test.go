package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// The plan usage of a settlement (SettleOp.Usage), as the billing ledger
// applies it in its group commit, on every engine.
func TestSettlementUsage(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		s := db.open(t, 0)
		ctx := context.Background()
		fine := planlimit.BucketStart(usageNow, planlimit.FineBucket)
		whole := func(sub, tokens int64) store.SettleOp {
			return store.SettleOp{UserID: 1, Usage: &store.UsageSettle{SubscriptionID: sub, Model: "gpt-4o", BucketStart: fine, Tokens: tokens}}
		}

		// Whole uses (SQLite's in-memory reservations) create the counters
		// and are summed per bucket: three calls, 60 tokens.
		if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{whole(21, 10), whole(21, 20), whole(21, 30)}); err != nil {
			t.Fatal(err)
		}
		if r, tok, life := usageOf(t, s, 21, usageNow); r != 3 || tok != 60 || life != 60 {
			t.Errorf("whole uses: %d requests, %d tokens, %d lifetime; want 3, 60, 60", r, tok, life)
		}

		// A reservation in the database settled through the ledger: its
		// estimate (500) is replaced by the real count (70).
		res, err := reserveUsage(s, 22, planlimit.Rule{RequestPeriod: 5}, 500, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		settle := store.SettleOp{UserID: 1, Key: "k-22", Log: &store.Log{UserID: 1, Type: store.LogConsume},
			Usage: &store.UsageSettle{HoldKey: res.Key, SubscriptionID: 22, Model: "gpt-4o", BucketStart: res.BucketStart, Tokens: 70}}
		if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{settle}); err != nil {
			t.Fatal(err)
		}
		if r, tok, life := usageOf(t, s, 22, usageNow); r != 1 || tok != 70 || life != 70 {
			t.Errorf("settled: %d requests, %d tokens, %d lifetime; want 1, 70, 70", r, tok, life)
		}

		// A release through the ledger gives the whole reservation back,
		// once.
		res, err = reserveUsage(s, 23, planlimit.Rule{RequestPeriod: 5}, 500, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		release := store.SettleOp{UserID: 1, Usage: &store.UsageSettle{HoldKey: res.Key, SubscriptionID: 23, Model: "gpt-4o",
			BucketStart: res.BucketStart, Release: true}}
		for range 2 {
			if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{release}); err != nil {
				t.Fatal(err)
			}
		}
		if r, tok, life := usageOf(t, s, 23, usageNow); r != 0 || tok != 0 || life != 0 {
			t.Errorf("released: %d requests, %d tokens, %d lifetime; want 0", r, tok, life)
		}

		// A settlement whose hold the janitor released already counts the
		// whole use: the release took the reservation back.
		res, err = reserveUsage(s, 24, planlimit.Rule{}, 500, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.ReleaseStaleUsageHolds(ctx, usageNow.Add(planlimit.MonthLength), 10); err != nil || n < 1 {
			t.Fatalf("janitor released %d: %v", n, err)
		}
		settle = store.SettleOp{UserID: 1, Key: "k-24", Log: &store.Log{UserID: 1, Type: store.LogConsume},
			Usage: &store.UsageSettle{HoldKey: res.Key, SubscriptionID: 24, Model: "gpt-4o", BucketStart: res.BucketStart, Tokens: 70}}
		if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{settle}); err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, s, 24, usageNow); r != 1 || tok != 70 {
			t.Errorf("settled after the janitor: %d requests, %d tokens; want 1, 70", r, tok)
		}

		// A parked settlement gives its hold back at once; its replay
		// counts the whole use.
		res, err = reserveUsage(s, 25, planlimit.Rule{}, 500, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		settle = store.SettleOp{UserID: 1, Key: "k-25", Log: &store.Log{UserID: 1, Type: store.LogConsume},
			Usage: &store.UsageSettle{HoldKey: res.Key, SubscriptionID: 25, Model: "gpt-4o", BucketStart: res.BucketStart, Tokens: 70}}
		id, err := s.ParkSettlement(ctx, settle, 3, "test")
		if err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, s, 25, usageNow); r != 0 || tok != 0 {
			t.Errorf("parked: %d requests, %d tokens; want the hold given back", r, tok)
		}
		if err := s.ReplayDeadLetter(ctx, id); err != nil {
			t.Fatal(err)
		}
		if r, tok, _ := usageOf(t, s, 25, usageNow); r != 1 || tok != 70 {
			t.Errorf("replayed: %d requests, %d tokens; want 1, 70", r, tok)
		}
	})
}

// Plan usage reserved by a process that dies comes back with its billing
// lease, once, however many janitors run; a live lease keeps it.
func TestExpiredLeaseUsageHoldsAreReleased(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		owner, janitor := db.open(t, 0), db.open(t, 0)
		if _, err := owner.StartLease(ctx, "owner", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		rule := planlimit.Rule{RequestPeriod: 3}
		for range 3 {
			if _, err := reserveUsage(owner, 31, rule, 100, usageNow); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := reserveUsage(owner, 31, rule, 100, usageNow); err == nil {
			t.Fatal("a fourth reservation fit a limit of 3")
		}
		if _, h, err := janitor.ReleaseExpiredLeases(ctx); err != nil || h != 0 {
			t.Fatalf("live lease: released %d holds, %v", h, err)
		}
		time.Sleep(400 * time.Millisecond) // the owner dies: no renewal
		for range 2 {
			if _, _, err := janitor.ReleaseExpiredLeases(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if r, tok, life := usageOf(t, janitor, 31, usageNow); r != 0 || tok != 0 || life != 0 {
			t.Errorf("after the lease expired: %d requests, %d tokens, %d lifetime; want all given back once", r, tok, life)
		}
		if _, err := reserveUsage(janitor, 31, rule, 100, usageNow); err != nil {
			t.Errorf("after the release: %v", err)
		}
	})
}
