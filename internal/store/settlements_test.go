package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// balances reads a user's quota, used quota and number of consume logs.
func balances(t *testing.T, s *store.Store, userID int64) (quota, used, logs int64) {
	t.Helper()
	u, err := s.UserByID(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := s.ListLogs(context.Background(), store.LogFilter{UserID: userID, Type: store.LogConsume}, store.Page{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return u.Quota, u.UsedQuota, n
}

func consume(userID, cost int64, key string) store.SettleOp {
	return store.SettleOp{UserID: userID, Cost: cost, Key: key,
		Log: &store.Log{UserID: userID, Type: store.LogConsume, Quota: cost, RequestID: key}}
}

// payer is a user with a balance of 1,000 and a hold of 300 on it.
type payer struct {
	*store.User
	held store.ReserveResult
}

func payerWithHold(t *testing.T, s *store.Store) payer {
	t.Helper()
	u := newUser("payer")
	u.Quota = 1000
	if err := s.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	held, err := s.ApplyBilling(context.Background(), []store.ReserveOp{{UserID: u.ID, Amount: 300}}, nil)
	if err != nil || held[0].Err != nil {
		t.Fatal(err, held)
	}
	return payer{User: u, held: held[0]}
}

// A commit retried after its acknowledgement was lost applies the same
// batch again: it must charge and log once. SQLite cannot lose an
// acknowledgement (the database is in the process) and records no keys.
func TestSettlementBatchAppliedTwiceChargesOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		if s.Dialect() == store.SQLite {
			t.Skip("SQLite commits are never ambiguous: no settlement keys")
		}
		u := payerWithHold(t, s)
		first := consume(u.ID, 100, "key-a")
		first.Held, first.ReservationID = u.held.Held, u.held.ReservationID
		batch := []store.SettleOp{first, consume(u.ID, 50, "key-b"), consume(u.ID, 50, "key-b")}
		for range 2 {
			if _, err := s.ApplyBilling(ctx, nil, batch); err != nil {
				t.Fatal(err)
			}
		}
		if q, used, logs := balances(t, s, u.ID); q != 850 || used != 150 || logs != 2 {
			t.Fatalf("quota %d, used %d, logs %d; want 850, 150, 2", q, used, logs)
		}
		if batch[0].Held != 300 {
			t.Fatalf("the caller's ops were changed: held %d", batch[0].Held)
		}
	})
}

// A parked settlement gives its hold back at once; its replay charges it
// once, and a replay of a settlement that had in fact committed charges
// nothing.
func TestDeadLetterReplayChargesOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := payerWithHold(t, s)
		op := consume(u.ID, 100, "key-parked")
		op.Held, op.ReservationID = u.held.Held, u.held.ReservationID
		id, err := s.ParkSettlement(ctx, op, 5, "poison")
		if err != nil {
			t.Fatal(err)
		}
		if q, _, logs := balances(t, s, u.ID); q != 1000 || logs != 0 {
			t.Fatalf("after parking: quota %d, logs %d; want the hold back (1000) and no log", q, logs)
		}
		rows, total, err := s.ListDeadLetters(ctx, store.Page{Limit: 10})
		if err != nil || total != 1 || rows[0].ID != id || rows[0].Cost != 100 || rows[0].Error != "poison" {
			t.Fatalf("dead letters %+v (total %d, err %v)", rows, total, err)
		}
		if err := s.ReplayDeadLetter(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplayDeadLetter(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second replay: %v, want not found", err)
		}
		if q, used, logs := balances(t, s, u.ID); q != 900 || used != 100 || logs != 1 {
			t.Fatalf("after replay: quota %d, used %d, logs %d; want 900, 100, 1", q, used, logs)
		}

		if s.Dialect() == store.SQLite {
			return // a commit SQLite reported failed did not happen: nothing below can occur
		}
		// Committed, but the ledger never heard so and parked it.
		committed := consume(u.ID, 40, "key-committed")
		if _, err := s.ApplyBilling(ctx, nil, []store.SettleOp{committed}); err != nil {
			t.Fatal(err)
		}
		id, err = s.ParkSettlement(ctx, committed, 5, "acknowledgement lost")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.PruneSettlementKeys(ctx, 1<<40); err != nil || n != 1 {
			t.Fatalf("pruned %d keys (err %v); want 1: every key but the parked one", n, err)
		}
		if err := s.ReplayDeadLetter(ctx, id); err != nil {
			t.Fatal(err)
		}
		if q, used, logs := balances(t, s, u.ID); q != 860 || used != 140 || logs != 2 {
			t.Fatalf("after replaying a committed settlement: quota %d, used %d, logs %d; want 860, 140, 2", q, used, logs)
		}
	})
}

// The error that parks a settlement may quote the bytes that broke it; the
// dead letter must still be written, on every engine.
func TestParkKeepsAnErrorWithBadBytes(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("payer")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		op := consume(u.ID, 10, "key-bytes")
		op.Log.SessionKey = "bad\xff\x00bytes"
		if _, err := s.ParkSettlement(ctx, op, 5, "invalid byte \xff and \x00 in it"); err != nil {
			t.Fatal(err)
		}
		rows, _, err := s.ListDeadLetters(ctx, store.Page{Limit: 10})
		if err != nil || len(rows) != 1 || rows[0].Error != "invalid byte \uFFFD and  in it" {
			t.Fatalf("dead letters %+v, %v", rows, err)
		}
	})
}
