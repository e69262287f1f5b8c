package store

import (
	"context"
	"testing"
	"time"
)

// A hold whose lease row is gone (it committed while its lease was being
// released) is returned once it is older than orphanGrace, not before.
func TestHoldsWithoutTheirLeaseAreReturnedAfterTheGrace(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		u := &User{Username: "payer", PasswordHash: "x", Role: 1, Status: 1, Group: "default", AffCode: "a", Quota: 100}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartLease(ctx, "owner", time.Minute); err != nil {
			t.Fatal(err)
		}
		ops := []ReserveOp{{UserID: u.ID, Amount: 10}, {UserID: u.ID, Amount: 20}}
		res, err := s.ApplyBilling(ctx, ops, nil)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("hold: %+v, %v", res, err)
		}
		// Both lose their lease; only the first is older than the grace.
		gone := s.LeaseID() + 1000*idStride
		err = s.db.Exec("UPDATE reservations SET lease_id = ? WHERE id IN ?", gone, []int64{res[0].ReservationID, res[1].ReservationID}).Error
		if err == nil {
			err = s.db.Exec("UPDATE reservations SET created_at = created_at - ? WHERE id = ?",
				int64(orphanGrace/time.Second)+5, res[0].ReservationID).Error
		}
		if err != nil {
			t.Fatal(err)
		}
		leases, holds, err := s.ReleaseExpiredLeases(ctx)
		if err != nil || leases != 0 || holds != 1 {
			t.Fatalf("released %d leases, %d holds, %v; want 0 and 1", leases, holds, err)
		}
		users, _, err := s.Balances(ctx, []int64{u.ID}, nil)
		if err != nil || users[u.ID] != 80 {
			t.Fatalf("balance %d, %v; want 80", users[u.ID], err)
		}
	})
}
