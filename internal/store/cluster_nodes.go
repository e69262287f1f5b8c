package store

import (
	"context"
	"time"

	"gorm.io/gorm/clause"

	"github.com/modelgate/modelgate/internal/cluster"
)

// ClusterNode is one peer in this node's table (spec: Cluster node). The
// table is per node: it is learned through ping and admin edits, never
// replicated, so no method here records a change for the outbox.
// SecretKey is the peer's CLUSTER_SECRET: empty for a node learned from
// another's list until an operator or the node itself supplies it.
type ClusterNode struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	NodeID        int    `gorm:"not null;uniqueIndex"`
	NodeName      string `gorm:"size:64;not null;default:''"`
	Address       string `gorm:"size:255;not null;default:''"`
	Status        int    `gorm:"not null;default:1"`
	LastHeartbeat int64  `gorm:"not null;default:0"`
	PingFailures  int    `gorm:"not null;default:0"`
	Disabled      bool   `gorm:"not null;default:false"`
	SecretKey     string `gorm:"size:255;not null;default:''" json:"-"`
	CreatedAt     int64  `gorm:"not null;default:0;autoCreateTime:false"`
	UpdatedAt     int64  `gorm:"not null;default:0;autoUpdateTime:false"`
}

// TableName is the table of ClusterNode.
func (ClusterNode) TableName() string { return "cluster_nodes" }

// Health is the part of n that ping outcomes move.
func (n *ClusterNode) Health() cluster.Health {
	return cluster.Health{Status: n.Status, PingFailures: n.PingFailures, LastHeartbeat: n.LastHeartbeat}
}

// ListClusterNodes returns one page of the node table by node id, and the
// total count.
func (s *Store) ListClusterNodes(ctx context.Context, p Page) ([]ClusterNode, int64, error) {
	var total int64
	if err := s.read(ctx).Model(&ClusterNode{}).Count(&total).Error; err != nil {
		return nil, 0, wrap("count cluster nodes", err)
	}
	var rows []ClusterNode
	err := p.apply(s.read(ctx).Order("node_id")).Find(&rows).Error
	return rows, total, wrap("list cluster nodes", err)
}

// AllClusterNodes returns the whole node table by node id. node_id is
// unique and 1 to 49, so it holds at most 49 rows.
func (s *Store) AllClusterNodes(ctx context.Context) ([]ClusterNode, error) {
	var rows []ClusterNode
	err := s.read(ctx).Order("node_id").Limit(cluster.MaxNodeID + 1).Find(&rows).Error
	return rows, wrap("list cluster nodes", err)
}

// ClusterNodeByID returns the record with id.
func (s *Store) ClusterNodeByID(ctx context.Context, id int64) (ClusterNode, error) {
	var n ClusterNode
	err := s.read(ctx).Where("id = ?", id).Take(&n).Error
	return n, wrap("get cluster node", err)
}

// ClusterNodeByNodeID returns the record of cluster node nodeID.
func (s *Store) ClusterNodeByNodeID(ctx context.Context, nodeID int) (ClusterNode, error) {
	var n ClusterNode
	err := s.read(ctx).Where("node_id = ?", nodeID).Take(&n).Error
	return n, wrap("get cluster node", err)
}

// CreateClusterNode inserts n as an alive, enabled node and sets its id and
// times. A node id already in the table is ErrDuplicate.
func (s *Store) CreateClusterNode(ctx context.Context, n *ClusterNode) error {
	now := time.Now().Unix()
	n.ID, n.Status, n.PingFailures, n.LastHeartbeat, n.Disabled = 0, cluster.StatusAlive, 0, 0, false
	n.CreatedAt, n.UpdatedAt = now, now
	return s.write(ctx, "create cluster node", func(tx *Tx) error {
		return tx.db.Create(n).Error
	})
}

// UpdateClusterNode locks record id, lets apply change it (apply returns
// its refusal), writes it back and returns it. A node id taken by another
// record is ErrDuplicate.
func (s *Store) UpdateClusterNode(ctx context.Context, id int64, apply func(n *ClusterNode) error) (ClusterNode, error) {
	var row ClusterNode
	err := s.write(ctx, "update cluster node", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		if err := apply(&row); err != nil {
			return err
		}
		row.ID = id
		row.UpdatedAt = time.Now().Unix()
		return tx.db.Select("*").Omit("id", "created_at").Updates(&row).Error
	})
	return row, err
}

// SetClusterNodeDisabled sets disabled on record id (soft delete and
// enable) and returns the record.
func (s *Store) SetClusterNodeDisabled(ctx context.Context, id int64, disabled bool) (ClusterNode, error) {
	return s.UpdateClusterNode(ctx, id, func(n *ClusterNode) error {
		n.Disabled = disabled
		return nil
	})
}

// RecordPingSender stores what a known node said of itself in a ping
// signed with the secret this table holds for it (spec, Cluster rule 3;
// the caller checked the signature): its name, address and secret, which
// is how a node's new secret spreads. The secret the record held is
// checked again under the write, so a record root changed meanwhile is
// left alone (false). Status, failures and disabled stay: they describe
// this node's pings to it, and an admin's choice.
func (s *Store) RecordPingSender(ctx context.Context, sender cluster.Node, signedWith string) (bool, error) {
	var updated bool
	err := s.write(ctx, "record ping sender", func(tx *Tx) error {
		res := tx.db.Model(&ClusterNode{}).Where("node_id = ? AND secret_key = ? AND secret_key <> ''", sender.NodeID, signedWith).
			Updates(map[string]any{"node_name": sender.Name, "address": sender.Address, "secret_key": sender.Secret,
				"updated_at": time.Now().Unix()})
		updated = res.RowsAffected > 0
		return res.Error
	})
	return updated, err
}

// AddPingSender records a node not in the table that pinged this one,
// without a secret: whoever holds this node's secret can ping as any node
// id, so the record awaits root's secret (cluster.StateAwaitingSecret)
// and is neither pinged nor pushed to nor heard until then. It reports
// whether it added the record (a node id recorded meanwhile is left).
func (s *Store) AddPingSender(ctx context.Context, sender cluster.Node) (bool, error) {
	now := time.Now().Unix()
	var added bool
	err := s.write(ctx, "add ping sender", func(tx *Tx) error {
		n := ClusterNode{NodeID: sender.NodeID, NodeName: sender.Name, Address: sender.Address,
			Status: cluster.StatusAlive, CreatedAt: now, UpdatedAt: now}
		res := tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&n)
		added = res.RowsAffected > 0
		return res.Error
	})
	return added, err
}

// LearnClusterNodes adds the nodes a peer listed that the table lacks,
// without a secret (cluster.Unknown chose them), and returns how many it
// added. A node id that appeared meanwhile is left as it is.
func (s *Store) LearnClusterNodes(ctx context.Context, nodes []cluster.Node) (int, error) {
	if len(nodes) == 0 {
		return 0, nil
	}
	now := time.Now().Unix()
	added := 0
	err := s.write(ctx, "learn cluster nodes", func(tx *Tx) error {
		added = 0
		for _, n := range nodes {
			row := ClusterNode{NodeID: n.NodeID, NodeName: n.Name, Address: n.Address,
				Status: cluster.StatusAlive, CreatedAt: now, UpdatedAt: now}
			res := tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
			if res.Error != nil {
				return res.Error
			}
			added += int(res.RowsAffected)
		}
		return nil
	})
	return added, err
}

// RecordPingOutcome moves the health of record id after a ping: ok sets it
// alive with now as its heartbeat, a failure counts towards
// maxFailures (cluster.Health). It returns the record after the change.
func (s *Store) RecordPingOutcome(ctx context.Context, id int64, ok bool, now int64, maxFailures int) (ClusterNode, error) {
	var row ClusterNode
	err := s.write(ctx, "record ping outcome", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		h := row.Health().Failed(maxFailures)
		if ok {
			h = row.Health().Succeeded(now)
		}
		row.Status, row.PingFailures, row.LastHeartbeat = h.Status, h.PingFailures, h.LastHeartbeat
		return tx.db.Model(&ClusterNode{}).Where("id = ?", id).Updates(map[string]any{
			"status": h.Status, "ping_failures": h.PingFailures, "last_heartbeat": h.LastHeartbeat,
		}).Error
	})
	return row, err
}
