package store

import "gorm.io/gorm"

// migration0003 adds the table of open reservations, so money held for a
// call that never settled (the process died) can be given back.
func migration0003(db *gorm.DB) error {
	if err := db.AutoMigrate(&v3Reservation{}); err != nil {
		return err
	}
	return db.Create(&v1IdSequence{Name: "reservations", Next: 0}).Error
}

type v3Reservation struct {
	ID           int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"not null"`
	TokenID      int64 `gorm:"not null;default:0"`
	TokenLimited bool  `gorm:"not null"`
	Amount       int64 `gorm:"not null"`
	CreatedAt    int64 `gorm:"autoCreateTime:false;not null;index"`
}

func (v3Reservation) TableName() string { return "reservations" }
