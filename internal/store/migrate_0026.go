package store

import "gorm.io/gorm"

// migration0026 adds cluster_grants: on a user's (or a limited key's)
// owner node, the part of the user's balance (token_id 0) or of the key's
// remain_quota (user_id 0) granted to each other node to spend
// (docs/decisions/cluster-grants.md). It is per node and never replicated:
// each owner keeps the grants of the rows it owns. The row of user 0 and
// key 0 records, for a grantee node, the process start it last settled.
func migration0026(db *gorm.DB) error {
	return db.AutoMigrate(&v26ClusterGrant{})
}

type v26ClusterGrant struct {
	UserID     int64  `gorm:"primaryKey;autoIncrement:false"`
	TokenID    int64  `gorm:"primaryKey;autoIncrement:false"`
	NodeID     int    `gorm:"primaryKey;autoIncrement:false"`
	Amount     int64  `gorm:"not null;default:0"`
	LastKey    string `gorm:"size:64;not null;default:''"`
	LastAmount int64  `gorm:"not null;default:0"`
	UpdatedAt  int64  `gorm:"not null;default:0"`
}

func (v26ClusterGrant) TableName() string { return "cluster_grants" }
