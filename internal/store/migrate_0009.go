package store

import "gorm.io/gorm"

// migration0009 adds the usage counters of plan subscriptions (usage.go):
// per subscription, model and 10-minute bucket, the requests and tokens
// used (each use in a 10-minute and a 3-hour bucket, span being the width in seconds); per subscription the lifetime totals, whose row is also the lock
// that serialises a subscription's reservations; and the open holds, so a
// settlement or release applies once. Counter rows only ever change by
// increments, so the cluster can replicate them as deltas.
func migration0009(db *gorm.DB) error {
	return db.AutoMigrate(&v9PlanUsage{}, &v9PlanUsageTotal{}, &v9PlanUsageHold{})
}

type v9PlanUsage struct {
	SubscriptionID int64  `gorm:"primaryKey;autoIncrement:false"`
	Model          string `gorm:"primaryKey;size:191"`
	Span           int64  `gorm:"primaryKey;autoIncrement:false"`
	BucketStart    int64  `gorm:"primaryKey;autoIncrement:false;index"`
	Requests       int64  `gorm:"not null;default:0"`
	Tokens         int64  `gorm:"not null;default:0"`
}

func (v9PlanUsage) TableName() string { return "plan_usage" }

type v9PlanUsageTotal struct {
	SubscriptionID int64 `gorm:"primaryKey;autoIncrement:false"`
	Requests       int64 `gorm:"not null;default:0"`
	Tokens         int64 `gorm:"not null;default:0"`
}

func (v9PlanUsageTotal) TableName() string { return "plan_usage_totals" }

type v9PlanUsageHold struct {
	HoldKey        string `gorm:"primaryKey;size:32"`
	SubscriptionID int64  `gorm:"not null"`
	Model          string `gorm:"size:191;not null"`
	BucketStart    int64  `gorm:"not null"`
	Tokens         int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"autoCreateTime:false;not null;index"`
}

func (v9PlanUsageHold) TableName() string { return "plan_usage_holds" }
