package store

import "gorm.io/gorm"

// migration0011 adds orders (spec: Order): plan orders (type 1) and top-up
// orders (type 2) in one table. Money is stored as integer fen
// (amount_cents), never as a float: a payment notification's amount is
// compared with it exactly. order_no is unique (a collision is retried);
// the dashboard sums paid and refunded orders by (status, pay_time).
func migration0011(db *gorm.DB) error {
	if err := db.AutoMigrate(&v11Order{}); err != nil {
		return err
	}
	var n int64
	if err := db.Model(&v1IdSequence{}).Where("name = ?", "orders").Count(&n).Error; err != nil {
		return err
	}
	if n == 0 { // MySQL commits DDL at once: a step run again must not fail here
		return db.Create(&v1IdSequence{Name: "orders", Next: 0}).Error
	}
	return nil
}

type v11Order struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	Type        int    `gorm:"not null;index:idx_order_type_status,priority:1"`
	Source      int    `gorm:"not null;default:1"`
	OrderNo     string `gorm:"size:32;not null;uniqueIndex"`
	UserID      int64  `gorm:"not null;index:idx_order_user,priority:1"`
	PlanID      int64  `gorm:"not null;default:0;index"`
	PlanInfo    string `gorm:"type:text"`
	AmountCents int64  `gorm:"not null;default:0"`
	BonusQuota  int64  `gorm:"not null;default:0"`
	Mode        string `gorm:"size:16;not null;default:''"`
	ReplacesID  int64  `gorm:"not null;default:0"`
	Status      int    `gorm:"not null;default:0;index:idx_order_type_status,priority:2;index:idx_order_paid,priority:1"`
	PayStatus   int    `gorm:"not null;default:0"`
	PayMethod   string `gorm:"size:16;not null;default:''"`
	PayTradeNo  string `gorm:"size:128;not null;default:''"`
	PrepayID    string `gorm:"size:128;not null;default:''"`
	CreateTime  int64  `gorm:"not null;default:0;index:idx_order_user,priority:2"`
	UpdateTime  int64  `gorm:"not null;default:0"`
	PayTime     int64  `gorm:"not null;default:0;index:idx_order_paid,priority:2"`
}

func (v11Order) TableName() string { return "orders" }
