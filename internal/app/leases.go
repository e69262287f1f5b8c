package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/store"
)

// Billing lease defaults (config.BillingLease). The TTL allows two missed
// renewals; holds of a killed process come back within TTL + SweepEvery.
const (
	defaultLeaseTTL        = 30 * time.Second
	defaultLeaseRenewEvery = 10 * time.Second
	defaultLeaseSweepEvery = 5 * time.Second
)

func leaseSettings(c config.BillingLease) config.BillingLease {
	if c.TTL <= 0 {
		c.TTL = defaultLeaseTTL
	}
	if c.RenewEvery <= 0 {
		c.RenewEvery = min(defaultLeaseRenewEvery, c.TTL/3)
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = min(defaultLeaseSweepEvery, c.TTL/3)
	}
	return c
}

// usesLease says whether this process records its holds in the database
// under a lease: on a shared server database. On SQLite holds live in
// memory and die with the process.
func (a *App) usesLease() bool { return a.Store.Dialect() != store.SQLite }

// startLease takes this process's billing lease (a new one on every start,
// so a restarted process never mistakes its predecessor's holds for its
// own) and returns the holds of leases that already expired.
func (a *App) startLease(ctx context.Context) error {
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s pid %d node %d", host, os.Getpid(), a.cfg.Cluster.NodeID)
	id, err := a.Store.StartLease(ctx, holder, a.lease.TTL)
	if err != nil {
		return err
	}
	a.log.Info("took a billing lease", "lease", id, "ttl", a.lease.TTL)
	return a.releaseExpiredLeases(ctx)
}

// renewLease keeps the lease alive. A lease found released means this
// process stalled past the TTL and another returned its holds; the store
// has started a new lease.
func (a *App) renewLease(ctx context.Context) error {
	lost, err := a.Store.RenewLease(ctx)
	if lost {
		a.ledger.LeaseLost()
		a.log.Warn("the billing lease expired before renewal and its holds were given back elsewhere; took a new lease",
			"lease", a.Store.LeaseID())
	}
	return err
}

// releaseExpiredLeases is the janitor every process runs.
func (a *App) releaseExpiredLeases(ctx context.Context) error {
	leases, holds, err := a.Store.ReleaseExpiredLeases(ctx)
	if leases > 0 || holds > 0 {
		a.log.Warn("gave back money held by processes that stopped without settling", "leases", leases, "reservations", holds)
	}
	return err
}

// endLease returns what is still held under this process's lease and
// deletes it; called once the ledger committed every settlement.
func (a *App) endLease(ctx context.Context) error {
	holds, err := a.Store.EndLease(ctx)
	if holds > 0 {
		a.log.Warn("gave back money held by calls that did not settle before shutdown", "reservations", holds)
	}
	return err
}
