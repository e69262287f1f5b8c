package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// ErrOwnEventsPruned refuses a resync that would lose this node's own
// events: some the source has not applied are no longer in this node's
// outbox (pruned after 7 days), so they could not be replayed here.
var ErrOwnEventsPruned = errors.New("own events the source has not applied are gone from the outbox")

// Resync is what a resync did.
type Resync struct {
	Rows      int64
	Positions map[int]int64
	// Replayed is how many of this node's own events the source had not
	// applied yet and were applied again over its data.
	Replayed int
}

// ResyncSnapshot replaces this node's replicated data by a peer's snapshot
// on a node that has data (docs/cluster.md, Resync), in one transaction,
// as LoadSnapshot does for a new node but without the fresh check:
//
//   - the replicated tables, usage counters, row versions, parked deltas and
//     applied marks are replaced, abilities and rollups rebuilt, the applied
//     marks set to the snapshot's positions and the id counters moved past
//     every id; per-node tables stay (node table, cursors, this node's
//     outbox, holds, leases, idempotency and settlement keys, dead letters,
//     failed events);
//   - this node's own events the source has not applied yet (above the
//     snapshot's position for this node) are applied again over the
//     snapshot, in order, as the source will apply them when they reach
//     it: nothing this node wrote is lost, and a delta counts once on
//     every node. When some of them are gone from the outbox the resync is
//     refused (ErrOwnEventsPruned), unless force;
//   - holds of calls in flight here are taken out of the loaded balances
//     again (the snapshot gives the source's back, this node's settle
//     against its stored balance);
//   - this node's root stays, in place of the source's seeded root of the
//     same name: its password, access token and sessions go on working.
func (s *Replica) ResyncSnapshot(ctx context.Context, next func() ([]byte, error), force bool) (Resync, error) {
	var r Resync
	err := s.replaceData(ctx, "resync", func(tx *txn) error {
		var err error
		r, err = tx.resync(next, force)
		return err
	})
	if err != nil {
		return Resync{}, err
	}
	return r, nil
}

func (tx *txn) resync(next func() ([]byte, error), force bool) (Resync, error) {
	var r Resync
	line, err := next()
	if err != nil {
		return r, snapshotReadErr(err)
	}
	if r.Positions, err = tx.checkHeader(line); err != nil {
		return r, err
	}
	self := tx.s.nodeID
	if err := tx.checkOwnEvents(r.Positions[int(self)], force); err != nil {
		return r, err
	}
	roots, err := tx.ownRoots()
	if err != nil {
		return r, err
	}
	held, err := heldAmounts(tx.db)
	if err != nil {
		return r, err
	}
	if err := tx.clearForSnapshot(); err != nil {
		return r, err
	}
	if r.Rows, err = tx.insertSnapshotRows(next); err != nil {
		return r, err
	}
	if err := tx.afterSnapshot(r.Positions); err != nil {
		return r, err
	}
	if err := tx.restoreRoots(roots); err != nil {
		return r, err
	}
	if err := tx.takeHolds(held); err != nil {
		return r, err
	}
	r.Replayed, err = tx.replayOwn(r.Positions[int(self)])
	return r, err
}

// checkOwnEvents refuses when some of this node's events above pos (what
// the source applied of them) are no longer in the outbox: pruning deletes
// the oldest first, so the first one kept must follow pos.
func (tx *txn) checkOwnEvents(pos int64, force bool) error {
	seq, err := store.SequenceValue(tx.db, "cluster_events")
	if err != nil || seq == 0 {
		return err
	}
	self := tx.s.nodeID
	last := seq*idStride + self
	if last <= pos || force {
		return nil
	}
	var first *int64
	if err := tx.db.Model(&outboxRow{}).Where("id > ?", pos).Select("MIN(id)").Scan(&first).Error; err != nil {
		return err
	}
	if want := max(pos, self) + idStride; first == nil || *first != want {
		return fmt.Errorf("%w: the source has them up to %d, this node wrote up to %d", ErrOwnEventsPruned, pos, last)
	}
	return nil
}

// ownRoots returns this node's root users. A root is seeded per node and
// never replicated (a founding node's), or the cluster's (a node that
// joined); even a founding root's later changes replicate nowhere, since
// every peer holds the name "root" for its own.
func (tx *txn) ownRoots() ([]store.User, error) {
	var roots []store.User
	err := tx.db.Where("role = ?", user.RoleRoot).Find(&roots).Error
	return roots, err
}

// restoreRoots puts this node's roots back in place of the snapshot's
// unversioned user of the same name (the source's seeded root).
// A root the snapshot holds itself (same id: this node joined from the
// cluster) is the snapshot's. A name a replicated user holds stays that
// user's: the seeded root is then gone, as on a join.
func (tx *txn) restoreRoots(roots []store.User) error {
	t := replicatedTable("users")
	for i := range roots {
		u := &roots[i]
		var same int64
		if err := tx.db.Model(&store.User{}).Where("id = ?", u.ID).Count(&same).Error; err != nil {
			return err
		}
		if same > 0 {
			continue
		}
		var holders []store.User
		if err := tx.db.Where("username = ?", u.Username).Find(&holders).Error; err != nil {
			return err
		}
		kept := true
		for _, h := range holders {
			_, versioned, err := tx.version("users", t.rowKey(h.ID, ""))
			if err != nil {
				return err
			}
			if versioned {
				kept = false
				tx.s.log.Warn("resync: this node's seeded root is replaced, a replicated user holds its name", "user_id", h.ID)
				break
			}
			if err := tx.db.Delete(&store.User{}, h.ID).Error; err != nil {
				return err
			}
			if err := tx.Record(store.Change{Table: "users", Op: "DELETE", ID: h.ID}); err != nil {
				return err
			}
		}
		if !kept {
			continue
		}
		// As a map: zero values stay (a struct insert would give them the
		// column defaults).
		data, err := t.encodeRow(u, true)
		if err != nil {
			return err
		}
		cols, err := t.decodeRow(data)
		if err != nil {
			return err
		}
		if err := tx.db.Table("users").Create(cols).Error; err != nil {
			return fmt.Errorf("restore root: %w", err)
		}
		if err := tx.Record(store.Change{Table: "users", Op: "INSERT", ID: u.ID}); err != nil {
			return err
		}
	}
	return nil
}

// takeHolds takes this node's holds in flight out of the loaded balances
// again: they come back when each call settles or is released here.
func (tx *txn) takeHolds(h held) error {
	for id, amount := range h.users {
		if err := tx.db.Exec("UPDATE users SET quota = quota - ? WHERE id = ?", amount, id).Error; err != nil {
			return err
		}
	}
	for id, amount := range h.tokens {
		if err := tx.db.Exec("UPDATE tokens SET remain_quota = remain_quota - ? WHERE id = ?", amount, id).Error; err != nil {
			return err
		}
	}
	return nil
}

// replayOwn applies this node's events above pos again, in order, over
// the loaded data, a page at a time. They stay in the outbox: the pusher
// still sends them to every peer that has not acknowledged them.
func (tx *txn) replayOwn(pos int64) (int, error) {
	n := 0
	for {
		var rows []outboxRow
		if err := tx.db.Where("id > ?", pos).Order("id").Limit(snapshotPage).Find(&rows).Error; err != nil {
			return n, err
		}
		for _, row := range rows {
			ev := row.event()
			if _, err := tx.applySafely(ev); err != nil {
				return n, fmt.Errorf("replay own event %d: %w", ev.ID, err)
			}
			n++
			pos = ev.ID
		}
		if len(rows) < snapshotPage {
			return n, nil
		}
	}
}
