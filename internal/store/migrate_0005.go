package store

import "gorm.io/gorm"

// migration0005 adds the table of idempotency keys: the first answer to a
// credit request sent with an Idempotency-Key header, recorded in the same
// transaction as the credit.
func migration0005(db *gorm.DB) error {
	return db.AutoMigrate(&v5IdempotencyKey{})
}

type v5IdempotencyKey struct {
	CallerID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Route       string `gorm:"primaryKey;size:64"`
	IdemKey     string `gorm:"primaryKey;size:128"`
	RequestHash string `gorm:"size:64;not null"`
	Status      int    `gorm:"not null"`
	Response    string `gorm:"type:text;not null"`
	CreatedAt   int64  `gorm:"autoCreateTime:false;not null;index"`
}

func (v5IdempotencyKey) TableName() string { return "idempotency_keys" }
