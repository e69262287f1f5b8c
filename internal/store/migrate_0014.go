package store

import "gorm.io/gorm"

// migration0014 adds cluster_nodes (spec: Cluster node): this node's table
// of its peers. It is per node and never replicated (issue 11 §2), so its
// ids are plain auto-increment ids, not the cluster-safe ones of ids.go.
// node_id is unique: one record per peer.
func migration0014(db *gorm.DB) error {
	return db.AutoMigrate(&v14ClusterNode{})
}

type v14ClusterNode struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	NodeID        int    `gorm:"not null;uniqueIndex"`
	NodeName      string `gorm:"size:64;not null;default:''"`
	Address       string `gorm:"size:255;not null;default:''"`
	Status        int    `gorm:"not null;default:1"`
	LastHeartbeat int64  `gorm:"not null;default:0"`
	PingFailures  int    `gorm:"not null;default:0"`
	Disabled      bool   `gorm:"not null;default:false"`
	SecretKey     string `gorm:"size:255;not null;default:''"`
	CreatedAt     int64  `gorm:"not null;default:0"`
	UpdatedAt     int64  `gorm:"not null;default:0"`
}

func (v14ClusterNode) TableName() string { return "cluster_nodes" }
