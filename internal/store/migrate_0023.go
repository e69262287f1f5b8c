package store

import "gorm.io/gorm"

// migration0023 adds cluster_join_tokens: the single-use tokens root creates
// on a node for a peer to pull its snapshot (docs/cluster.md, Joining a new
// node). Per node and never replicated, like cluster_nodes: only the
// SHA-256 of a token is kept.
func migration0023(db *gorm.DB) error {
	return db.AutoMigrate(&v23JoinToken{})
}

type v23JoinToken struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	TokenHash string `gorm:"size:64;not null;uniqueIndex"`
	NodeID    int    `gorm:"not null"`
	ExpiresAt int64  `gorm:"not null"`
	UsedAt    int64  `gorm:"not null;default:0"`
	CreatedAt int64  `gorm:"not null;default:0"`
}

func (v23JoinToken) TableName() string { return "cluster_join_tokens" }
