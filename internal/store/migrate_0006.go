package store

import "gorm.io/gorm"

// migration0006 adds billing leases: each process sharing a server database
// holds a lease it renews, and every reservation records the lease it was
// made under, so the holds of a process that died can be given back as soon
// as its lease expires (leases.go). Reservations of older versions keep
// lease_id 0.
func migration0006(db *gorm.DB) error {
	if err := db.AutoMigrate(&v6Lease{}, &v6Reservation{}); err != nil {
		return err
	}
	return db.Create(&v1IdSequence{Name: "billing_leases", Next: 0}).Error
}

type v6Lease struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	Holder      string `gorm:"size:200;not null;default:''"`
	StartedAt   int64  `gorm:"not null"`
	HeartbeatAt int64  `gorm:"not null"`
	ExpiresAt   int64  `gorm:"not null;index"`
}

func (v6Lease) TableName() string { return "billing_leases" }

type v6Reservation struct {
	ID           int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"not null"`
	TokenID      int64 `gorm:"not null;default:0"`
	TokenLimited bool  `gorm:"not null"`
	Amount       int64 `gorm:"not null"`
	CreatedAt    int64 `gorm:"autoCreateTime:false;not null;index"`
	LeaseID      int64 `gorm:"not null;default:0;index"`
}

func (v6Reservation) TableName() string { return "reservations" }
