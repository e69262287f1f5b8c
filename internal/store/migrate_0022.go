package store

import "gorm.io/gorm"

// migration0022 lets a plan usage hold count many calls: a node sharing a
// server database leases a slice of a subscription's limits (requests and
// tokens) as one hold and counts the calls it served from it
// (docs/decisions/balance-slices.md). A hold of one call, as every hold
// was before, has requests 1 and nothing used.
func migration0022(db *gorm.DB) error {
	return db.AutoMigrate(&v22PlanUsageHold{})
}

type v22PlanUsageHold struct {
	HoldKey        string `gorm:"primaryKey;size:32"`
	SubscriptionID int64  `gorm:"not null"`
	Model          string `gorm:"size:191;not null"`
	BucketStart    int64  `gorm:"not null"`
	Tokens         int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"autoCreateTime:false;not null;index"`
	LeaseID        int64  `gorm:"not null;default:0"`
	Requests       int64  `gorm:"not null;default:1"`
	UsedRequests   int64  `gorm:"not null;default:0"`
	UsedTokens     int64  `gorm:"not null;default:0"`
}

func (v22PlanUsageHold) TableName() string { return "plan_usage_holds" }
