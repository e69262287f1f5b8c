// Package replica owns replication (docs/cluster.md, Replication): the
// outbox that turns each committed change into events in the same
// transaction, the hybrid clock and row versions of last-writer-wins,
// applying a peer's batch (deltas, parking, failed events, the root
// guard), how replicated rows are encoded, the gap-free sequence of each
// origin, join and resync snapshots and the consistency digest.
//
// It reaches the database through store's small exported surface
// (store/replication.go): store keeps connections, transactions,
// migrations and rows; store never imports this package.
package replica

import (
	"context"
	"log/slog"
	"sync"

	"gorm.io/gorm"

	"github.com/modelgate/modelgate/internal/store"
)

// idStride is the cluster's id modulus (store.IDStride): the node of an
// event or a row is its id modulo it.
const idStride = store.IDStride

// Replica is the replication of one node's store. It is safe for
// concurrent use.
type Replica struct {
	st     *store.Store
	nodeID int64
	log    *slog.Logger
	// outbox is set in cluster mode (EnableOutbox).
	outbox *outboxConfig
	// clock orders this node's writes for last-writer-wins (outbox.go).
	clock hybridClock
	// applyGate keeps pushed batches (ApplyEvents, read side) out while a
	// snapshot loads (LoadSnapshot, ResyncSnapshot: write side).
	applyGate sync.RWMutex
}

// New returns the replication of st, whose node id it uses. The outbox is
// off until EnableOutbox.
func New(st *store.Store) *Replica {
	return &Replica{st: st, nodeID: st.NodeID(), log: st.Logger()}
}

// txn is a store transaction as replication works in it: the store's
// exported surface (Record, ForUpdate, …), its handle, and the replica.
type txn struct {
	*store.Tx
	db *gorm.DB
	s  *Replica
}

func (r *Replica) txn(tx *store.Tx) *txn { return &txn{Tx: tx, db: tx.DB(), s: r} }

// inTx is store.InTx handing out a txn.
func (r *Replica) inTx(ctx context.Context, fn func(tx *txn) error) error {
	return r.st.InTx(ctx, func(tx *store.Tx) error { return fn(r.txn(tx)) })
}
