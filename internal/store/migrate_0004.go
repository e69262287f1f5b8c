package store

import "gorm.io/gorm"

// migration0004 adds the tables that make settlements exactly-once and
// never lost: the keys of applied settlements (a retried commit whose
// acknowledgement was lost charges nothing more) and the dead letters
// (settlements that kept failing, parked with their error for an admin to
// replay).
func migration0004(db *gorm.DB) error {
	if err := db.AutoMigrate(&v4SettlementKey{}, &v4DeadLetter{}); err != nil {
		return err
	}
	return db.Create(&v1IdSequence{Name: "billing_dead_letters", Next: 0}).Error
}

type v4SettlementKey struct {
	SettleKey string `gorm:"primaryKey;size:64"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null;index"`
}

func (v4SettlementKey) TableName() string { return "settlement_keys" }

type v4DeadLetter struct {
	ID        int64  `gorm:"primaryKey;autoIncrement:false"`
	SettleKey string `gorm:"size:64;not null;default:'';index"`
	UserID    int64  `gorm:"not null"`
	TokenID   int64  `gorm:"not null;default:0"`
	ChannelID int64  `gorm:"not null;default:0"`
	Held      int64  `gorm:"not null;default:0"`
	Cost      int64  `gorm:"not null;default:0"`
	Attempts  int    `gorm:"not null;default:0"`
	Error     string `gorm:"type:text"`
	Op        string `gorm:"type:text"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null;index"`
	UpdatedAt int64  `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (v4DeadLetter) TableName() string { return "billing_dead_letters" }
