package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// poison installs a trigger that refuses the log of request "poison" and
// returns what removes it.
func (f *fixture) poison(t *testing.T) (cure func()) {
	t.Helper()
	create, drop := storetest.PoisonLogTrigger(f.eng)
	storetest.ExecSQL(t, f.dsn, f.path, create...)
	return func() { storetest.ExecSQL(t, f.dsn, f.path, drop) }
}

func (f *fixture) consume(hold int64, reservation int64, cost int64, requestID, key string) store.SettleOp {
	return store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold, ReservationID: reservation, Cost: cost, Key: key,
		Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: cost, RequestID: requestID}}
}

func (f *fixture) deadLetters(t *testing.T) []store.DeadLetter {
	t.Helper()
	rows, _, err := f.st.ListDeadLetters(context.Background(), store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// held is what a hold of everything gets, released at once: what the
// ledger believes is available.
func (f *fixture) available(t *testing.T) int64 {
	t.Helper()
	hold, err := f.ledger.Reserve(context.Background(), f.op(1<<40))
	if err != nil {
		t.Fatal(err)
	}
	f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold.Amount, ReservationID: hold.ReservationID})
	return hold.Amount
}

// A settlement the database refuses is retried, then parked: uncharged,
// its hold given back, while the settlements beside it commit; the ledger
// (and a local ledger's book) stays exact, and a replay charges it once.
func TestFailingSettlementIsParkedAndTheBookStaysExact(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 1000, 0, false)
		ctx := context.Background()
		cure := f.poison(t)
		bad, err := f.ledger.Reserve(ctx, f.op(100))
		if err != nil {
			t.Fatal(err)
		}
		good, err := f.ledger.Reserve(ctx, f.op(100))
		if err != nil {
			t.Fatal(err)
		}
		f.ledger.SettleHold(bad, f.consume(bad.Amount, bad.ReservationID, 60, "poison", "key-bad"))
		f.ledger.SettleHold(good, f.consume(good.Amount, good.ReservationID, 10, "fine", "key-good"))
		// A reservation committed in the same batch as the failing
		// settlement does not fail because of it.
		probe, err := f.ledger.Reserve(ctx, f.op(5))
		if err != nil {
			t.Fatalf("a reservation beside a failing settlement: %v", err)
		}
		f.ledger.SettleHold(probe, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: probe.Amount, ReservationID: probe.ReservationID})
		deadline := time.Now().Add(15 * time.Second)
		for len(f.deadLetters(t)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the failing settlement was not parked")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if d := f.deadLetters(t)[0]; d.Cost != 60 || d.Held != 0 || d.SettleKey != "key-bad" || d.Attempts != 5 || f.ledger.Parked() != 1 {
			t.Fatalf("dead letter %+v, parked %d", d, f.ledger.Parked())
		}
		if user, _ := f.balances(t); user != 990 {
			t.Fatalf("balance %d, want 990: the good settlement charged, the bad one's hold back", user)
		}
		if got := f.available(t); got != 990 {
			t.Fatalf("the ledger holds up to %d, want 990", got)
		}

		cure()
		if err := f.st.ReplayDeadLetter(ctx, f.deadLetters(t)[0].ID); err != nil {
			t.Fatal(err)
		}
		if user, _ := f.balances(t); user != 930 {
			t.Fatalf("balance after replay %d, want 930", user)
		}
		if got := f.available(t); got != 930 {
			t.Fatalf("after the replay the ledger holds up to %d, want 930", got)
		}
		if n, _ := f.st.CountUserLogs(ctx, f.user.ID, store.LogConsume); n != 2 {
			t.Fatalf("%d consume logs, want 2", n)
		}
	})
}

// Close does not drop a settlement that fails: it parks it.
func TestCloseParksFailingSettlements(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 1000, 0, false)
		f.poison(t)
		f.ledger.Settle(f.consume(0, 0, 60, "poison", "key-bad"))
		f.ledger.Settle(f.consume(0, 0, 10, "fine", "key-good"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.ledger.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// After Close, a settlement is applied at once, and parked too.
		f.ledger.Settle(f.consume(0, 0, 70, "poison", "key-late"))
		u, _ := f.st.UserByID(ctx, f.user.ID)
		if letters := f.deadLetters(t); len(letters) != 2 || u.Quota != 990 {
			t.Fatalf("after close: %d dead letters, balance %d; want 2 and 990", len(letters), u.Quota)
		}
	})
}
