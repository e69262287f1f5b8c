package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// Open calls (UsageOp.MinTokens): 30 parallel reservations asking 400
// tokens each, accepting 50, from two handles against token_period 1,000,
// hold together no more than the window and fill it (what is left is less
// than one least call); each holds between 50 and 400, and the counters
// hold exactly what they were granted.
func TestParallelOpenReservationsFillTheWindowExactly(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		nodes := []*store.Store{db.open(t, 0), db.open(t, 1)}
		rule := planlimit.Rule{TokenPeriod: 1000}
		var mu sync.Mutex
		var held, served int64
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				r, err := nodes[i%2].ReserveUsage(context.Background(), store.UsageOp{SubscriptionID: 61, Model: "gpt-4o",
					Rule: rule, Tokens: 400, MinTokens: 50, Now: usageNow})
				switch {
				case err == nil:
					if r.Tokens < 50 || r.Tokens > 400 {
						t.Errorf("held %d, want 50..400", r.Tokens)
					}
					mu.Lock()
					held += r.Tokens
					served++
					mu.Unlock()
				case !errors.Is(err, store.ErrUsageLimit):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if held > 1000 || 1000-held >= 50 || served < 3 {
			t.Fatalf("%d calls held %d tokens of a window of 1,000", served, held)
		}
		if r, tok, _ := usageOf(t, nodes[0], 61, usageNow); r != served || tok != held {
			t.Fatalf("counters %d requests, %d tokens; want %d and %d", r, tok, served, held)
		}
	})
}

// A usage slice grown for an open call decides it with what the window
// can hold of it (LeastTokens), and takes no more than the window's rest.
func TestUsageSliceForAnOpenCall(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		s := db.open(t, 0)
		rule := planlimit.Rule{TokenPeriod: 1000}
		if _, err := reserveUsage(s, 62, rule, 900, usageNow); err != nil {
			t.Fatal(err)
		}
		op := store.UsageSliceOp{UsageOp: store.UsageOp{SubscriptionID: 62, Model: "gpt-4o", Rule: rule, Tokens: 400, MinTokens: 50, Now: usageNow},
			Requests: 4, SliceTokens: 800}
		g, err := s.GrowUsageSlice(context.Background(), op)
		if err != nil || g.LeastTokens != 100 || g.Tokens != 100 {
			t.Fatalf("grant %+v, %v; want 100 tokens for a call of 100", g, err)
		}
		if _, err := s.GrowUsageSlice(context.Background(), op); limitOf(t, err).Name != "token_period" {
			t.Fatalf("a full window: %v", err)
		}
	})
}
