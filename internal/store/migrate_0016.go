package store

import "gorm.io/gorm"

// migration0016 adds cluster_failed_events: peers' events this node could
// not apply because of their values (docs/cluster.md, Receiving). They are
// kept whole for the operator instead of failing every later batch of
// their node.
func migration0016(db *gorm.DB) error {
	return db.AutoMigrate(&v16FailedEvent{})
}

type v16FailedEvent struct {
	EventID    int64  `gorm:"primaryKey;autoIncrement:false"`
	NodeID     int    `gorm:"not null"`
	TableName_ string `gorm:"column:table_name;size:64;not null"`
	Operation  string `gorm:"size:8;not null"`
	Kind       string `gorm:"size:8;not null;default:''"`
	PrimaryKey int64  `gorm:"not null;default:0"`
	RowKey     string `gorm:"size:191;not null;default:''"`
	Data       string `gorm:"type:text"`
	TimeUS     int64  `gorm:"column:time_us;not null"`
	Error      string `gorm:"type:text"`
	CreatedAt  int64  `gorm:"not null;index"`
}

func (v16FailedEvent) TableName() string { return "cluster_failed_events" }
