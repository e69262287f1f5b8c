package store

import "gorm.io/gorm"

// migration0020 adds the usage cubes (cubes.go): consume logs summed per
// UTC day, user, key name, model, channel and group; per day, model,
// channel and group; and per hour, model, channel and group. InsertLogs keeps them in the logs'
// transaction and DeleteLogsBefore recomputes what it cut. The step fills
// them from the logs already there; it empties them first, since on MySQL
// the DDL has committed and a step run again must not add twice. It counts
// the logs per hour and type (log_hour_counts) for the log lists. It also
// gives PostgreSQL an index on (created_at, id), so the log lists find a
// deep page's first row from the index alone (ListLogs): SQLite's and
// InnoDB's created_at index already carries the primary key.
func migration0020(db *gorm.DB) error {
	if err := db.AutoMigrate(&v20UsageDay{}, &v20UsageDayChannel{}, &v20UsageHourChannel{}, &v20LogHourCount{},
		&v20UsageDayUser{}); err != nil {
		return err
	}
	if db.Dialector.Name() == "postgres" {
		if err := db.Exec("CREATE INDEX IF NOT EXISTS idx_logs_created_id ON logs (created_at, id)").Error; err != nil {
			return err
		}
	}
	for _, c := range usageCubes {
		if err := db.Exec("DELETE FROM " + c.table).Error; err != nil {
			return err
		}
	}
	if err := rebuildCubes(db, usageCubes, 0, 0); err != nil {
		return err
	}
	return recountLogHours(db, 0, 0)
}

// v20UsageDayUser is 0013's usage_day_users with an index on (user_id,
// day_start): the top-users join probes it per user, and PostgreSQL's
// generic plan of that join (a nested loop over users) otherwise scanned
// the (day_start, user_id) key for each user: 370 ms for 1,000 users and
// 30 days instead of 10 (docs/performance.md).
type v20UsageDayUser struct {
	DayStart     int64 `gorm:"primaryKey;autoIncrement:false;index:idx_usage_day_users_user,priority:2"`
	UserID       int64 `gorm:"primaryKey;autoIncrement:false;index:idx_usage_day_users_user,priority:1"`
	RequestCount int64 `gorm:"not null;default:0"`
	Quota        int64 `gorm:"not null;default:0"`
}

func (v20UsageDayUser) TableName() string { return "usage_day_users" }

// v20LogHourCount is a row of log_hour_counts (logcounts.go): the logs of
// every type per UTC hour and type, kept through every delete.
type v20LogHourCount struct {
	HourStart int64 `gorm:"primaryKey;autoIncrement:false"`
	Type      int   `gorm:"primaryKey;autoIncrement:false"`
	N         int64 `gorm:"not null;default:0"`
}

func (v20LogHourCount) TableName() string { return "log_hour_counts" }

type v20UsageDay struct {
	DayStart         int64  `gorm:"primaryKey;autoIncrement:false;index:idx_usage_days_user,priority:2;index:idx_usage_days_username,priority:2"`
	UserID           int64  `gorm:"primaryKey;autoIncrement:false;index:idx_usage_days_user,priority:1"`
	Username         string `gorm:"primaryKey;size:64;index:idx_usage_days_username,priority:1"`
	TokenName        string `gorm:"primaryKey;size:64"`
	ModelName        string `gorm:"primaryKey;size:191"`
	ChannelID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Group            string `gorm:"column:log_group;primaryKey;size:64"`
	RequestCount     int64  `gorm:"not null;default:0"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (v20UsageDay) TableName() string { return "usage_days" }

type v20UsageDayChannel struct {
	DayStart         int64  `gorm:"primaryKey;autoIncrement:false"`
	ModelName        string `gorm:"primaryKey;size:191"`
	ChannelID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Group            string `gorm:"column:log_group;primaryKey;size:64"`
	RequestCount     int64  `gorm:"not null;default:0"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (v20UsageDayChannel) TableName() string { return "usage_day_channels" }

type v20UsageHourChannel struct {
	HourStart        int64  `gorm:"primaryKey;autoIncrement:false"`
	ModelName        string `gorm:"primaryKey;size:191"`
	ChannelID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Group            string `gorm:"column:log_group;primaryKey;size:64"`
	RequestCount     int64  `gorm:"not null;default:0"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (v20UsageHourChannel) TableName() string { return "usage_hour_channels" }
