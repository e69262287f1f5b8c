package store

import "gorm.io/gorm"

// migration0027 adds received_payments (issue 26, §4): one row per order
// activated with money (not pay_method free, amount > 0), keyed by the
// order's id and written in the activation's transaction. It outlives the
// order (root may delete orders), so the dashboard's revenue is read from
// it. The step fills it from the paid and refunded orders already there.
func migration0027(db *gorm.DB) error {
	if err := db.AutoMigrate(&v27ReceivedPayment{}); err != nil {
		return err
	}
	// Run again on MySQL (DDL commits at once) the rows may be there.
	return db.Exec("INSERT INTO received_payments (order_id, order_no, user_id, order_type, amount_cents, pay_method, trade_no, pay_time, refund_time, credit_quota) " +
		"SELECT id, order_no, user_id, type, amount_cents, pay_method, pay_trade_no, pay_time, " +
		"CASE WHEN status = 3 THEN update_time ELSE 0 END, CASE WHEN type = 2 THEN bonus_quota ELSE 0 END FROM orders " +
		"WHERE status IN (1, 3) AND pay_time > 0 AND amount_cents > 0 AND pay_method <> 'free' " +
		"AND id NOT IN (SELECT order_id FROM received_payments)").Error
}

type v27ReceivedPayment struct {
	OrderID     int64  `gorm:"primaryKey;autoIncrement:false"`
	OrderNo     string `gorm:"size:32;not null"`
	UserID      int64  `gorm:"not null;index"`
	OrderType   int    `gorm:"not null"`
	AmountCents int64  `gorm:"not null"`
	PayMethod   string `gorm:"size:16;not null;default:''"`
	TradeNo     string `gorm:"size:128;not null;default:''"`
	PayTime     int64  `gorm:"not null;index"`
	RefundTime  int64  `gorm:"not null;default:0"`
	CreditQuota int64  `gorm:"not null;default:0"`
}

func (v27ReceivedPayment) TableName() string { return "received_payments" }
