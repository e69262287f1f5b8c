package store

import "gorm.io/gorm"

// migration0008 adds the plan catalogue (plans) and the subscriptions users
// hold (user_plans). A subscription is looked up by user and status with
// the earliest end first (the relay's order of payers), and the expiry job
// finds active rows past their end by (status, end_time).
func migration0008(db *gorm.DB) error {
	if err := db.AutoMigrate(&v8Plan{}, &v8UserPlan{}); err != nil {
		return err
	}
	for _, table := range []string{"plans", "user_plans"} {
		var n int64
		if err := db.Model(&v1IdSequence{}).Where("name = ?", table).Count(&n).Error; err != nil {
			return err
		}
		// MySQL commits DDL at once: a step run again must not fail here.
		if n == 0 {
			if err := db.Create(&v1IdSequence{Name: table, Next: 0}).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

type v8Plan struct {
	ID           int64   `gorm:"primaryKey;autoIncrement:false"`
	Name         string  `gorm:"size:64;not null"`
	Price        float64 `gorm:"not null;default:0"`
	Tokens       int64   `gorm:"not null;default:0"`
	ModelLimits  string  `gorm:"type:text"`
	DefaultModel string  `gorm:"size:191;not null;default:''"`
	Description  string  `gorm:"type:text"`
	Features     string  `gorm:"type:text"`
	Sort         int     `gorm:"not null;default:0"`
	Status       int     `gorm:"not null;default:0"`
	DurationDays int     `gorm:"not null;default:30"`
	DurationText string  `gorm:"size:64;not null;default:''"`
	Recommended  bool    `gorm:"not null;default:false"`
	CreatedTime  int64   `gorm:"not null;default:0"`
	UpdatedTime  int64   `gorm:"not null;default:0"`
}

func (v8Plan) TableName() string { return "plans" }

type v8UserPlan struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID      int64  `gorm:"not null;index:idx_user_plan_user,priority:1"`
	PlanID      int64  `gorm:"not null;index"`
	OrderID     int64  `gorm:"not null;default:0"`
	StartTime   int64  `gorm:"not null"`
	EndTime     int64  `gorm:"not null;index:idx_user_plan_user,priority:3;index:idx_user_plan_status,priority:2"`
	Status      int    `gorm:"not null;default:1;index:idx_user_plan_user,priority:2;index:idx_user_plan_status,priority:1"`
	BillingType string `gorm:"size:16;not null;default:'token'"`
	Notes       string `gorm:"size:500;not null;default:''"`
	CreatedTime int64  `gorm:"not null;default:0"`
	UpdatedTime int64  `gorm:"not null;default:0"`
}

func (v8UserPlan) TableName() string { return "user_plans" }
