package store

import "gorm.io/gorm"

// migration0013 adds the usage rollups of the admin dashboard (rollup.go):
// consume logs summed per UTC day and model, and per UTC day and user.
// InsertLogs keeps them in the transaction of the logs, and
// DeleteLogsBefore recomputes what it cut, so they always equal the sums
// over the logs. The step fills them from the logs already there; it
// empties them first, since on MySQL the DDL has committed and a step run
// again must not add twice.
func migration0013(db *gorm.DB) error {
	if err := db.AutoMigrate(&v13UsageDayModel{}, &v13UsageDayUser{}); err != nil {
		return err
	}
	for _, table := range []string{"usage_day_models", "usage_day_users"} {
		if err := db.Exec("DELETE FROM " + table).Error; err != nil {
			return err
		}
	}
	return rebuildRollups(db, 0, 0)
}

type v13UsageDayModel struct {
	DayStart         int64  `gorm:"primaryKey;autoIncrement:false"`
	ModelName        string `gorm:"primaryKey;size:191"`
	RequestCount     int64  `gorm:"not null;default:0"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (v13UsageDayModel) TableName() string { return "usage_day_models" }

type v13UsageDayUser struct {
	DayStart     int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"primaryKey;autoIncrement:false"`
	RequestCount int64 `gorm:"not null;default:0"`
	Quota        int64 `gorm:"not null;default:0"`
}

func (v13UsageDayUser) TableName() string { return "usage_day_users" }
