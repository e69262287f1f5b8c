package store

import (
	"crypto/rand"

	"gorm.io/gorm"
)

// migration0021 adds config_state, one row that counts configuration
// changes (docs/operations.md, Config propagation): every transaction that
// changes what nodes cache (keys, users, channels, prices, options, plans,
// subscriptions) adds one to version before it commits, so nodes sharing the
// database can tell whether they have seen every change. instance names the
// database for the push channels (a PostgreSQL NOTIFY channel, a Redis
// pub/sub channel), so deployments that share a server or a Redis never
// hear each other. The table does not replicate: each database counts its
// own changes.
func migration0021(db *gorm.DB) error {
	if err := db.AutoMigrate(&v21ConfigState{}); err != nil {
		return err
	}
	var n int64
	if err := db.Model(&v21ConfigState{}).Where("id = 1").Count(&n).Error; err != nil || n > 0 {
		return err
	}
	return db.Create(&v21ConfigState{ID: 1, Instance: rand.Text()[:16]}).Error
}

type v21ConfigState struct {
	ID       int64  `gorm:"primaryKey;autoIncrement:false"`
	Version  int64  `gorm:"not null;default:0"`
	Instance string `gorm:"size:32;not null"`
}

func (v21ConfigState) TableName() string { return "config_state" }
