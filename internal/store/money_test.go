package store_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// TestAddUserQuotaBounds: credits apply to any balance, negative ones too,
// up to pricing.MaxBalance; debits only down to zero; nothing is written
// when refused, on every engine.
func TestAddUserQuotaBounds(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("bounds")
		u.Quota = -500
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		balance := func() int64 {
			t.Helper()
			got, err := s.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.Quota
		}
		if err := s.AddUserQuota(ctx, u.ID, 200, nil); err != nil || balance() != -300 {
			t.Fatalf("credit to -500: %v, balance %d", err, balance())
		}
		if err := s.AddUserQuota(ctx, u.ID, -1, nil); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("debit below zero: %v", err)
		}
		if err := s.AddUserQuota(ctx, u.ID, pricing.MaxBalance+300, nil); !errors.Is(err, store.ErrBalanceLimit) {
			t.Fatalf("credit above the maximum: %v", err)
		}
		if err := s.AddUserQuota(ctx, u.ID, pricing.MaxBalance+300-1, nil); !errors.Is(err, store.ErrBalanceLimit) {
			t.Fatalf("one credit above the maximum, though the balance would not pass it: %v", err)
		}
		if err := s.AddUserQuota(ctx, u.ID, pricing.MaxBalance, nil); err != nil || balance() != pricing.MaxBalance-300 {
			t.Fatalf("credit of the maximum: %v, balance %d", err, balance())
		}
		for _, d := range []int64{301, math.MaxInt64, math.MinInt64} {
			if err := s.AddUserQuota(ctx, u.ID, d, nil); err == nil {
				t.Fatalf("delta %d accepted", d)
			}
		}
		if b := balance(); b != pricing.MaxBalance-300 {
			t.Fatalf("balance %d after refused changes", b)
		}
	})
}

// TestUsedQuotaSaturates: settlement counters stop at pricing.MaxCounter
// instead of overflowing the column, on every engine.
func TestUsedQuotaSaturates(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		near := pricing.MaxCounter - 10
		u := newUser("counter")
		u.UsedQuota, u.Quota = near, pricing.MaxBalance
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		c := store.Channel{Type: 1, Name: "c", Models: "m", Groups: "default", Status: 1, UsedQuota: near}
		if err := s.CreateChannel(ctx, &c); err != nil {
			t.Fatal(err)
		}
		tok := store.Token{UserID: u.ID, Name: "k", KeyHash: "hash", KeyPrefix: "sk-", KeySuffix: "x", Status: 1,
			RemainQuota: pricing.MaxBalance, UsedQuota: near, ExpiredTime: -1}
		if err := s.CreateToken(ctx, &tok); err != nil {
			t.Fatal(err)
		}
		op := store.SettleOp{UserID: u.ID, TokenID: tok.ID, ChannelID: c.ID, TokenLimited: true, Cost: pricing.MaxCallCost,
			Log: &store.Log{UserID: u.ID, Type: store.LogConsume, Quota: pricing.MaxCallCost}}
		for range 2 {
			if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{op, op}); err != nil {
				t.Fatal(err)
			}
		}
		gotU, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		gotC, err := s.ChannelByID(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		gotT, err := s.UserToken(ctx, u.ID, tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		if gotU.UsedQuota != pricing.MaxCounter || gotC.UsedQuota != pricing.MaxCounter || gotT.UsedQuota != pricing.MaxCounter {
			t.Fatalf("used quota user %d channel %d key %d, want %d", gotU.UsedQuota, gotC.UsedQuota, gotT.UsedQuota, pricing.MaxCounter)
		}
		if gotU.Quota != pricing.MaxBalance-4*pricing.MaxCallCost || gotT.RemainQuota != pricing.MaxBalance-4*pricing.MaxCallCost {
			t.Fatalf("balance %d, key %d", gotU.Quota, gotT.RemainQuota)
		}
	})
}

// TestRunIdempotentOnce: concurrent requests with one key run the credit
// once and all get its answer; a different request with the key is refused.
func TestRunIdempotentOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("idem")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		k := store.IdempotencyKey{CallerID: 1, Route: "POST /api/topup", Key: "k1", RequestHash: "h1"}
		var wg sync.WaitGroup
		answers := make([]store.Answer, 30)
		errs := make([]error, len(answers))
		for i := range answers {
			wg.Go(func() {
				answers[i], _, errs[i] = s.RunIdempotent(ctx, k, func(tx *store.Tx) (store.Answer, error) {
					return store.Answer{Status: 200, Body: []byte("first")}, tx.AddUserQuota(u.ID, 5)
				})
			})
		}
		wg.Wait()
		for i := range answers {
			if errs[i] != nil || answers[i].Status != 200 || string(answers[i].Body) != "first" {
				t.Fatalf("answer %+v, err %v", answers[i], errs[i])
			}
		}
		if got, _ := s.UserByID(ctx, u.ID); got.Quota != 5 {
			t.Fatalf("balance %d after 30 requests with one key, want 5", got.Quota)
		}
		k.RequestHash = "h2"
		_, _, err := s.RunIdempotent(ctx, k, func(tx *store.Tx) (store.Answer, error) { return store.Answer{}, nil })
		if !errors.Is(err, store.ErrIdempotencyMismatch) {
			t.Fatalf("reuse for another request: %v", err)
		}
		if n, err := s.PruneIdempotencyKeys(ctx); err != nil || n != 0 {
			t.Fatalf("prune of a fresh key: %d, %v", n, err)
		}
	})
}

// TestOpenClampsBadMoneyRows: rows written before the limits, with values
// beyond them (a REAL on SQLite after an overflow), are brought back within
// the limits when the store opens, so every read of them works again.
func TestOpenClampsBadMoneyRows(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("bad")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		c := store.Channel{Type: 1, Name: "c", Models: "m", Groups: "default", Status: 1}
		if err := s.CreateChannel(ctx, &c); err != nil {
			t.Fatal(err)
		}
		overflowed := "9000000000000000000"
		if db.dsn == "" {
			overflowed = "1.8e19" // what SQLite stores when an integer sum overflows
		}
		for _, q := range []string{
			"UPDATE users SET quota = 9000000000000000000, used_quota = " + overflowed + " WHERE id = ?",
			"UPDATE channels SET used_quota = " + overflowed + " WHERE id = ?",
		} {
			id := u.ID
			if q[7] == 'c' {
				id = c.ID
			}
			if err := store.ExecForTest(s, q, id); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		s = db.open(t, 0)
		gotU, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		gotC, err := s.ChannelByID(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.RoutingData(ctx); err != nil {
			t.Fatal(err)
		}
		if gotU.Quota != pricing.MaxBalance || gotU.UsedQuota != pricing.MaxCounter || gotC.UsedQuota != pricing.MaxCounter {
			t.Fatalf("after reopening: user %d/%d, channel %d", gotU.Quota, gotU.UsedQuota, gotC.UsedQuota)
		}
	})
}
