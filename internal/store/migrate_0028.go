package store

import "gorm.io/gorm"

// migration0028 adds payment_exceptions (issue 26, §3): a verified payment
// no order could take (the order cancelled, expired, refunded, paid by
// another trade, or an upgrade no longer activatable), one row per
// (pay_method, trade_no), with the outcome of its refund at the provider.
func migration0028(db *gorm.DB) error {
	if err := db.AutoMigrate(&v28PaymentException{}); err != nil {
		return err
	}
	var n int64
	if err := db.Model(&v1IdSequence{}).Where("name = ?", "payment_exceptions").Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return db.Create(&v1IdSequence{Name: "payment_exceptions", Next: 0}).Error
}

type v28PaymentException struct {
	ID            int64  `gorm:"primaryKey;autoIncrement:false"`
	OrderID       int64  `gorm:"not null;default:0;index"`
	OrderNo       string `gorm:"size:32;not null;default:''"`
	UserID        int64  `gorm:"not null;default:0"`
	AmountCents   int64  `gorm:"not null"`
	PayMethod     string `gorm:"size:16;not null;uniqueIndex:idx_payment_exceptions_trade,priority:1"`
	TradeNo       string `gorm:"size:128;not null;uniqueIndex:idx_payment_exceptions_trade,priority:2"`
	Reason        string `gorm:"size:32;not null"`
	Status        string `gorm:"size:16;not null;index"`
	Note          string `gorm:"type:text"`
	RefundNo      string `gorm:"size:64;not null;default:''"`
	RefundOutcome string `gorm:"size:255;not null;default:''"`
	RefundTime    int64  `gorm:"not null;default:0"`
	CreateTime    int64  `gorm:"not null;default:0"`
	UpdateTime    int64  `gorm:"not null;default:0"`
}

func (v28PaymentException) TableName() string { return "payment_exceptions" }
