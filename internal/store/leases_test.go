package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// holdFixture is a user with a limited key on a database several store
// handles (processes) share.
type holdFixture struct {
	user  *store.User
	token *store.Token
}

func newHoldFixture(t *testing.T, s *store.Store, quota, tokenQuota int64) holdFixture {
	t.Helper()
	ctx := context.Background()
	u := newUser("payer")
	u.Quota = quota
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	tk := &store.Token{UserID: u.ID, Name: "k", KeyHash: "h", KeyPrefix: "a", KeySuffix: "b", Status: 1,
		ExpiredTime: -1, RemainQuota: tokenQuota}
	if err := s.CreateToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
	return holdFixture{user: u, token: tk}
}

// hold reserves n holds of amount each through s, as a ledger batch does.
func (f holdFixture) hold(t *testing.T, s *store.Store, n int, amount int64) []store.ReserveResult {
	t.Helper()
	ops := make([]store.ReserveOp, n)
	for i := range ops {
		ops[i] = store.ReserveOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Amount: amount}
	}
	res, err := s.ApplyBilling(context.Background(), ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || r.Held != amount {
			t.Fatalf("hold: %+v", r)
		}
	}
	return res
}

func (f holdFixture) settle(t *testing.T, s *store.Store, r store.ReserveResult, cost int64) {
	t.Helper()
	op := store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Held: r.Held, Cost: cost,
		ReservationID: r.ReservationID, Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: cost}}
	if _, err := s.ApplyBilling(context.Background(), nil, []store.SettleOp{op}); err != nil {
		t.Fatal(err)
	}
}

func (f holdFixture) expect(t *testing.T, s *store.Store, user, token int64) {
	t.Helper()
	users, tokens, err := s.Balances(context.Background(), []int64{f.user.ID}, []int64{f.token.ID})
	if err != nil {
		t.Fatal(err)
	}
	if users[f.user.ID] != user || tokens[f.token.ID] != token {
		t.Fatalf("balances user %d key %d, want %d and %d", users[f.user.ID], tokens[f.token.ID], user, token)
	}
}

// The holds of a process whose lease expired come back exactly once, however
// many processes run the janitor at the same moment; a late settlement of
// one of them charges its cost without returning the hold again; the owner's
// next renewal notices and takes a new lease.
func TestExpiredLeaseHoldsAreReleasedOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		owner, janitorA, janitorB := db.open(t, 0), db.open(t, 0), db.open(t, 0)
		f := newHoldFixture(t, owner, 1000, 500)
		first, err := owner.StartLease(ctx, "owner", 300*time.Millisecond)
		if err != nil || first == 0 {
			t.Fatalf("lease %d, %v", first, err)
		}
		res := f.hold(t, owner, 10, 30)
		f.settle(t, owner, res[0], 10) // settled before the crash
		f.expect(t, owner, 1000-10-9*30, 500-10-9*30)

		// A live lease keeps its holds.
		if leases, holds, err := janitorA.ReleaseExpiredLeases(ctx); err != nil || leases+holds != 0 {
			t.Fatalf("live lease: released %d leases, %d holds, %v", leases, holds, err)
		}
		time.Sleep(400 * time.Millisecond) // the owner stalls past its TTL

		var wg sync.WaitGroup
		var mu sync.Mutex
		var leases, holds int
		for i := range 6 {
			s := janitorA
			if i%2 == 1 {
				s = janitorB
			}
			wg.Go(func() {
				l, h, err := s.ReleaseExpiredLeases(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				leases, holds = leases+l, holds+h
				mu.Unlock()
			})
		}
		wg.Wait()
		if leases != 1 || holds != 9 {
			t.Fatalf("released %d leases and %d holds in all, want 1 and 9", leases, holds)
		}
		f.expect(t, owner, 990, 490)

		// A call of the stalled owner finishes after all: it pays, once.
		f.settle(t, owner, res[1], 7)
		f.expect(t, owner, 983, 483)

		lost, err := owner.RenewLease(ctx)
		if err != nil || !lost || owner.LeaseID() == first || owner.LeaseID() == 0 {
			t.Fatalf("renewal of a released lease: lost %v, lease %d (was %d), %v", lost, owner.LeaseID(), first, err)
		}
		f.hold(t, owner, 1, 3)
		if l, h, err := janitorA.ReleaseExpiredLeases(ctx); err != nil || l+h != 0 {
			t.Fatalf("the new lease's hold released: %d leases, %d holds, %v", l, h, err)
		}
		f.expect(t, owner, 980, 480)
	})
}

// Renewing keeps a lease and its holds alive past its TTL; once renewals
// stop, another process returns the holds.
func TestRenewedLeaseKeepsItsHolds(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		owner, janitor := db.open(t, 0), db.open(t, 0)
		f := newHoldFixture(t, owner, 100, 100)
		if _, err := owner.StartLease(ctx, "owner", 400*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		f.hold(t, owner, 2, 25)
		for range 8 { // 1.2 s: three TTLs
			time.Sleep(150 * time.Millisecond)
			if lost, err := owner.RenewLease(ctx); err != nil || lost {
				t.Fatalf("renewal: lost %v, %v", lost, err)
			}
			if l, h, err := janitor.ReleaseExpiredLeases(ctx); err != nil || l+h != 0 {
				t.Fatalf("released %d leases, %d holds of a renewed lease, %v", l, h, err)
			}
		}
		f.expect(t, owner, 50, 50)
		time.Sleep(500 * time.Millisecond)
		if l, h, err := janitor.ReleaseExpiredLeases(ctx); err != nil || l != 1 || h != 2 {
			t.Fatalf("after renewals stopped: released %d leases, %d holds, %v", l, h, err)
		}
		f.expect(t, owner, 100, 100)
	})
}

// A graceful end returns what the lease still covers; the age rule for
// holds without a lease never touches holds under one.
func TestEndLeaseReturnsItsHolds(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		f := newHoldFixture(t, s, 100, 100)
		if _, err := s.StartLease(ctx, "graceful", time.Minute); err != nil {
			t.Fatal(err)
		}
		res := f.hold(t, s, 2, 20)
		if n, err := s.ReleaseStaleReservations(ctx, time.Now().Unix()+10); err != nil || n != 0 {
			t.Fatalf("the age rule released %d holds under a lease, %v", n, err)
		}
		if holds, err := s.EndLease(ctx); err != nil || holds != 2 {
			t.Fatalf("end lease: %d holds, %v", holds, err)
		}
		f.expect(t, s, 100, 100)
		f.settle(t, s, res[0], 5)
		f.expect(t, s, 95, 95)
		if s.LeaseID() != 0 {
			t.Fatalf("lease %d after the end", s.LeaseID())
		}
	})
}
