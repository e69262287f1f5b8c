package billing_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// A reservation with Min is all or nothing below Min: it holds at least Min
// (up to Amount, capped by what is available) or nothing, and says which
// account was short. A key with quota left, only too little, is short, not
// exhausted.
func TestReserveMinIsAllOrNothing(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 100, 1000, true)
		ctx := context.Background()
		op := f.op(80)
		op.Min = 70
		hold, err := f.ledger.Reserve(ctx, op)
		if err != nil || hold.Amount != 80 {
			t.Fatalf("reserve 80 (min 70) of 100: held %d, %v", hold.Amount, err)
		}
		op.Amount, op.Min = 50, 30 // 20 left: below Min
		if _, err := f.ledger.Reserve(ctx, op); !errors.Is(err, store.ErrUserQuota) {
			t.Fatalf("reserve min 30 of 20 left: %v, want ErrUserQuota", err)
		}
		op.Min = 20 // exactly what is left: held in full, capped by the balance
		hold2, err := f.ledger.Reserve(ctx, op)
		if err != nil || hold2.Amount != 20 {
			t.Fatalf("reserve min 20 of 20 left: held %d, %v", hold2.Amount, err)
		}
		f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Held: hold.Amount, ReservationID: hold.ReservationID})
		f.ledger.SettleHold(hold2, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Held: hold2.Amount, ReservationID: hold2.ReservationID})
		if user, token := f.balances(t); user != 100 || token != 1000 {
			t.Fatalf("after releases: user %d, key %d, want 100 and 1000", user, token)
		}

		k := setup(t, m, 1000, 40, true)
		op = k.op(100)
		op.Min = 50
		if _, err := k.ledger.Reserve(ctx, op); !errors.Is(err, store.ErrTokenQuotaShort) || !errors.Is(err, store.ErrTokenQuota) {
			t.Fatalf("key with 40 left, min 50: %v, want ErrTokenQuotaShort (an ErrTokenQuota)", err)
		}
		if user, token := k.balances(t); user != 1000 || token != 40 {
			t.Fatalf("a refused reservation moved money: user %d, key %d", user, token)
		}
	})
}

// Parallel reservations with Min never hold below Min and never more than
// the balance: 10 of 25 parallel calls needing 10 each fit in 100.
func TestConcurrentReservationsWithMin(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 100, 0, false)
		var mu sync.Mutex
		var held []int64
		var wg sync.WaitGroup
		for range 25 {
			wg.Go(func() {
				op := f.op(10)
				op.Min = 10
				hold, err := f.ledger.Reserve(context.Background(), op)
				if err == nil {
					mu.Lock()
					held = append(held, hold.Amount)
					mu.Unlock()
				} else if !errors.Is(err, store.ErrUserQuota) {
					t.Errorf("reserve: %v", err)
				}
			})
		}
		wg.Wait()
		if len(held) != 10 {
			t.Fatalf("%d reservations held %v, want 10 of 10", len(held), held)
		}
		for _, h := range held {
			if h != 10 {
				t.Fatalf("held %v: one below Min", held)
			}
		}
	})
}
