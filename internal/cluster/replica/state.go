package replica

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// RewindClusterCursor moves peer nodeID's cursor back to eventID: the peer
// refused a batch because it needs an earlier event (it lost or never had
// what the cursor says it acknowledged), so the pusher resends from there.
// A cursor never moves forward here; a peer without a cursor gets one at
// eventID, below anything it was sent.
func (s *Replica) RewindClusterCursor(ctx context.Context, nodeID int, eventID int64) error {
	return store.Wrap("rewind cluster cursor", s.inTx(ctx, func(tx *txn) error {
		now := time.Now().Unix()
		var n int64
		if err := tx.db.Model(&clusterCursor{}).Where("node_id = ?", nodeID).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return tx.db.Create(&clusterCursor{NodeID: nodeID, EventID: eventID, UpdatedAt: now}).Error
		}
		return tx.db.Model(&clusterCursor{}).Where("node_id = ? AND event_id > ?", nodeID, eventID).
			Updates(map[string]any{"event_id": eventID, "updated_at": now}).Error
	}))
}

// OutboxStart is the id of the oldest event this node's outbox still
// keeps, or, when retention emptied it, of the next event it will write:
// a peer that needs an event below it cannot get it any more.
func (s *Replica) OutboxStart(ctx context.Context) (int64, error) {
	var first *int64
	if err := s.st.Read(ctx).Model(&outboxRow{}).Select("MIN(id)").Scan(&first).Error; err != nil {
		return 0, store.Wrap("read oldest cluster event", err)
	}
	if first != nil {
		return *first, nil
	}
	seq, err := store.SequenceValue(s.st.Read(ctx), "cluster_events")
	if err != nil {
		return 0, store.Wrap("read cluster event counter", err)
	}
	return (seq+1)*idStride + s.nodeID, nil
}

// PeerReplication is the replication state of one peer of the node
// table, as this node sees it.
type PeerReplication struct {
	NodeID int
	// Acked is the last of this node's events the peer acknowledged (its
	// cursor; 0: none yet); Applied the last of the peer's events applied
	// here.
	Acked, Applied int64
	// Pending counts this node's events after Acked still in the outbox;
	// OldestPending is the creation time (unix seconds) of the first of
	// them, 0 when there is none.
	Pending, OldestPending int64
}

// ReplicationState reads the replication state of every peer of the node
// table in one query, and OutboxStart: the admin list and the metrics
// show it without a query per peer.
func (s *Replica) ReplicationState(ctx context.Context) (map[int]PeerReplication, int64, error) {
	var rows []PeerReplication
	err := s.st.Read(ctx).Raw(`SELECT n.node_id AS node_id, COALESCE(c.event_id, 0) AS acked, COALESCE(a.event_id, 0) AS applied,
		COUNT(e.id) AS pending, COALESCE(MIN(e.created_at), 0) AS oldest_pending
		FROM cluster_nodes n
		LEFT JOIN cluster_cursors c ON c.node_id = n.node_id
		LEFT JOIN cluster_applied a ON a.node_id = n.node_id
		LEFT JOIN cluster_events e ON e.id > COALESCE(c.event_id, 0)
		GROUP BY n.node_id, c.event_id, a.event_id`).Scan(&rows).Error
	if err != nil {
		return nil, 0, store.Wrap("read cluster replication state", err)
	}
	start, err := s.OutboxStart(ctx)
	if err != nil {
		return nil, 0, err
	}
	m := make(map[int]PeerReplication, len(rows))
	for _, r := range rows {
		m[r.NodeID] = r
	}
	return m, start, nil
}
