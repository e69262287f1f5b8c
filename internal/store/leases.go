package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Billing leases let nodes sharing a server database give back the holds of
// a process that died (kill -9, power loss) within seconds instead of hours.
// Each process holds a lease, a row it renews; every reservation records the
// lease it was made under. When a lease expires, any surviving process (or
// the next one to start) returns its holds and deletes it, in one
// transaction. The times are the database's clock, in unix milliseconds, so
// the nodes' clocks need not agree.
//
// A process whose lease was taken from it (it stalled longer than the TTL)
// notices at its next renewal and starts a new lease. Its calls in flight
// still settle: their reservation rows are gone, so the settlement charges
// the cost and returns nothing a second time (closeReservations).

// Lease is one process's billing lease.
type Lease struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	Holder      string `gorm:"size:200;not null;default:''"` // host and pid, for operators
	StartedAt   int64  `gorm:"not null"`
	HeartbeatAt int64  `gorm:"not null"`
	ExpiresAt   int64  `gorm:"not null;index"`
}

func (Lease) TableName() string { return "billing_leases" }

// orphanGrace is how old a reservation whose lease row is missing must be
// before it is returned. Such a row comes from a reservation that committed
// while its lease was being released; the grace keeps a racing snapshot from
// mistaking a fresh hold of a live lease for one.
const orphanGrace = time.Minute

// leaseState is this process's current lease.
type leaseState struct {
	id atomic.Int64 // read by every reservation batch
	// live is how many processes held an unexpired lease at the last
	// sweep (at least 1): FairShare divides by it.
	live   atomic.Int64
	mu     sync.Mutex // serialises start, renew and end
	holder string
	ttl    time.Duration
}

// LeaseID is the lease new reservations are recorded under; 0 when the
// process holds none (SQLite, or before StartLease).
func (s *Store) LeaseID() int64 { return s.lease.id.Load() }

// FairShare is the divisor of what a balance slice may take of what is
// left of a balance beyond the calls waiting for it: twice the processes
// that hold a billing lease, so however many nodes ask at once, at least
// half of a balance stays free for the others.
func (s *Store) FairShare() int64 { return 2 * max(s.lease.live.Load(), 1) }

// StartLease takes a new lease that expires ttl from now unless renewed, and
// records every later reservation under it. holder describes the process.
func (s *Store) StartLease(ctx context.Context, holder string, ttl time.Duration) (int64, error) {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	if len(holder) > 200 {
		holder = strings.ToValidUTF8(holder[:200], "")
	}
	s.lease.holder, s.lease.ttl = holder, ttl
	return s.startLease(ctx)
}

func (s *Store) startLease(ctx context.Context) (int64, error) {
	var lease Lease
	err := s.write(ctx, "start billing lease", func(tx *Tx) error {
		now, err := tx.dbNowMillis()
		if err != nil {
			return err
		}
		id, err := tx.allocIDs("billing_leases", 1)
		if err != nil {
			return err
		}
		lease = Lease{ID: id, Holder: s.lease.holder, StartedAt: now, HeartbeatAt: now, ExpiresAt: now + s.lease.ttl.Milliseconds()}
		return tx.db.Create(&lease).Error
	})
	if err != nil {
		return 0, err
	}
	s.lease.id.Store(lease.ID)
	return lease.ID, nil
}

// RenewLease extends the current lease by its TTL. When the lease is gone
// (it expired and another process returned its holds) it starts a new one
// and reports lost: the process must not go on recording holds under a
// lease nobody watches any more.
func (s *Store) RenewLease(ctx context.Context) (lost bool, err error) {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	id := s.lease.id.Load()
	if id == 0 {
		return false, errors.New("renew billing lease: no lease started")
	}
	var exists bool
	err = s.write(ctx, "renew billing lease", func(tx *Tx) error {
		now, err := tx.dbNowMillis()
		if err != nil {
			return err
		}
		// An expired lease not yet released is simply extended: a janitor
		// locks the lease row before deciding, so it either sees the new
		// expiry or releases first and this update finds no row.
		res := tx.db.Model(&Lease{}).Where("id = ?", id).
			Updates(map[string]any{"heartbeat_at": now, "expires_at": now + s.lease.ttl.Milliseconds()})
		if res.Error != nil {
			return res.Error
		}
		exists = res.RowsAffected == 1
		if !exists { // MySQL counts an update that changed nothing as 0 rows
			var n int64
			if err := tx.db.Model(&Lease{}).Where("id = ?", id).Count(&n).Error; err != nil {
				return err
			}
			exists = n == 1
		}
		return nil
	})
	if err != nil || exists {
		return false, err
	}
	_, err = s.startLease(ctx)
	return true, err
}

// EndLease returns the holds still recorded under this process's lease and
// deletes it: the graceful end of a process, after its ledger flushed every
// settlement. A call that settles later pays its cost without its hold
// being returned twice.
func (s *Store) EndLease(ctx context.Context) (holds int, err error) {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	id := s.lease.id.Load()
	if id == 0 {
		return 0, nil
	}
	err = s.write(ctx, "end billing lease", func(tx *Tx) error {
		var err error
		holds, err = tx.releaseHolds([]int64{id}, nil)
		return err
	})
	if err == nil {
		s.lease.id.Store(0)
	}
	return holds, err
}

// ReleaseExpiredLeases returns the holds of every expired lease and deletes
// those leases, each exactly once however many processes run it at the same
// time. It also returns holds whose lease row is missing (see orphanGrace).
// It returns how many leases and holds it released; when nothing expired it
// costs two indexed reads.
func (s *Store) ReleaseExpiredLeases(ctx context.Context) (leases, holds int, err error) {
	now, err := s.dbNowMillis(ctx)
	if err != nil {
		return 0, 0, wrap("release expired billing leases", err)
	}
	var expired, orphans []int64
	db := s.read(ctx)
	if err := db.Model(&Lease{}).Where("expires_at < ?", now).Pluck("id", &expired).Error; err != nil {
		return 0, 0, wrap("release expired billing leases", err)
	}
	var live int64
	if err := db.Model(&Lease{}).Where("expires_at >= ?", now).Count(&live).Error; err != nil {
		return 0, 0, wrap("release expired billing leases", err)
	}
	s.lease.live.Store(live)
	cutoff := (now - orphanGrace.Milliseconds()) / 1000
	err = db.Model(&Reservation{}).Where("created_at < ? AND lease_id <> 0 AND lease_id NOT IN (SELECT id FROM billing_leases)", cutoff).
		Pluck("id", &orphans).Error
	if err != nil {
		return 0, 0, wrap("release expired billing leases", err)
	}
	if len(expired) == 0 && len(orphans) == 0 {
		return 0, 0, nil
	}
	err = s.write(ctx, "release expired billing leases", func(tx *Tx) error {
		now, err := tx.dbNowMillis()
		if err != nil {
			return err
		}
		// Locking the leases first makes concurrent janitors wait for each
		// other: the second finds the rows deleted and releases nothing, and
		// a renewal that won the race keeps its lease.
		var locked []int64
		if len(expired) > 0 {
			err := tx.forUpdate().Model(&Lease{}).Where("id IN ? AND expires_at < ?", expired, now).Order("id").Pluck("id", &locked).Error
			if err != nil {
				return err
			}
		}
		leases = len(locked)
		holds, err = tx.releaseHolds(locked, orphans)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return leases, holds, nil
}

// releaseHolds gives back the reservations recorded under leaseIDs plus the
// reservations ids, and the plan usage reserved under leaseIDs, and deletes
// the leases. settle locks each reservation
// and skips those a settlement closed meanwhile, so nothing is returned
// twice.
func (tx *Tx) releaseHolds(leaseIDs, ids []int64) (int, error) {
	var rows []Reservation
	if len(leaseIDs) > 0 {
		if err := tx.db.Where("lease_id IN ?", leaseIDs).Find(&rows).Error; err != nil {
			return 0, err
		}
	}
	if len(ids) > 0 {
		var more []Reservation
		if err := tx.db.Where("id IN ?", ids).Find(&more).Error; err != nil {
			return 0, err
		}
		rows = append(rows, more...)
	}
	ops := make([]SettleOp, 0, len(rows))
	seen := make(map[int64]bool, len(rows))
	for _, r := range rows {
		if !seen[r.ID] {
			seen[r.ID] = true
			ops = append(ops, SettleOp{UserID: r.UserID, TokenID: r.TokenID, TokenLimited: r.TokenLimited, Held: r.Amount, ReservationID: r.ID})
		}
	}
	if err := tx.settle(ops); err != nil {
		return 0, err
	}
	usage, err := tx.releaseUsageHolds(leaseIDs)
	if err != nil {
		return 0, err
	}
	if len(leaseIDs) > 0 {
		if err := tx.db.Where("id IN ?", leaseIDs).Delete(&Lease{}).Error; err != nil {
			return 0, err
		}
	}
	return len(ops) + usage, nil
}

// nowMillisSQL reads the database server's clock in unix milliseconds, so
// lease expiry never depends on the nodes' clocks agreeing.
var nowMillisSQL = map[Dialect]string{
	Postgres: "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
	MySQL:    "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000",
}

func (tx *Tx) dbNowMillis() (int64, error) {
	q, ok := nowMillisSQL[tx.s.dialect]
	if !ok { // SQLite runs in this process: its clock is ours
		return time.Now().UnixMilli(), nil
	}
	var now int64
	err := tx.db.Raw(q).Scan(&now).Error
	return now, err
}

func (s *Store) dbNowMillis(ctx context.Context) (int64, error) {
	return (&Tx{db: s.read(ctx), s: s}).dbNowMillis()
}
