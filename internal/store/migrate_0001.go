package store

import "gorm.io/gorm"

// migration0001 creates the v1 schema. The struct types below are frozen
// copies of the stored types as they were when this migration landed: a later
// change to models.go needs a new migration, never an edit here.
func migration0001(db *gorm.DB) error {
	err := db.AutoMigrate(
		&v1User{},
		&v1Token{},
		&v1Channel{},
		&v1Ability{},
		&v1ModelPrice{},
		&v1GroupPrice{},
		&v1Redemption{},
		&v1Log{},
		&v1Option{},
		&v1IdSequence{},
	)
	if err != nil {
		return err
	}
	// One counter row per table up front, so concurrent first inserts only
	// ever update an existing row (MySQL deadlocks on racing inserts).
	for _, table := range []string{"users", "tokens", "channels", "abilities", "model_prices",
		"group_prices", "redemptions", "logs"} {
		if err := db.Create(&v1IdSequence{Name: table, Next: 0}).Error; err != nil {
			return err
		}
	}
	return nil
}

type v1User struct {
	ID             int64   `gorm:"primaryKey;autoIncrement:false"`
	Username       string  `gorm:"size:64;uniqueIndex;not null"`
	PasswordHash   string  `gorm:"size:255;not null"`
	DisplayName    string  `gorm:"size:64;not null;default:''"`
	Role           int     `gorm:"not null;default:1"`
	Status         int     `gorm:"not null;default:1;index"`
	Email          string  `gorm:"size:128;not null;default:'';index"`
	Quota          int64   `gorm:"not null;default:0"`
	UsedQuota      int64   `gorm:"not null;default:0"`
	RequestCount   int64   `gorm:"not null;default:0"`
	AccessToken    *string `gorm:"size:64;uniqueIndex"`
	Group          string  `gorm:"column:user_group;size:64;not null;default:'default'"`
	AffCode        string  `gorm:"size:32;uniqueIndex;not null"`
	SessionVersion int64   `gorm:"not null;default:1"`
	CreatedAt      int64   `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt      int64   `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (v1User) TableName() string { return "users" }

type v1Token struct {
	ID             int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID         int64  `gorm:"not null;index"`
	Name           string `gorm:"size:64;not null"`
	KeyHash        string `gorm:"size:64;uniqueIndex;not null"`
	KeyPrefix      string `gorm:"size:16;not null"`
	KeySuffix      string `gorm:"size:16;not null"`
	Status         int    `gorm:"not null;default:1"`
	CreatedTime    int64  `gorm:"not null;default:0"`
	AccessedTime   int64  `gorm:"not null;default:0"`
	ExpiredTime    int64  `gorm:"not null;default:-1"`
	RemainQuota    int64  `gorm:"not null;default:0"`
	UnlimitedQuota bool   `gorm:"not null;default:false"`
	UsedQuota      int64  `gorm:"not null;default:0"`
	Models         string `gorm:"type:text"`
	Subnet         string `gorm:"size:1024;not null;default:''"`
}

func (v1Token) TableName() string { return "tokens" }

type v1Channel struct {
	ID           int64  `gorm:"primaryKey;autoIncrement:false"`
	Type         int    `gorm:"not null;default:1"`
	Name         string `gorm:"size:128;not null"`
	Key          string `gorm:"column:channel_key;type:text"`
	BaseURL      string `gorm:"size:512;not null;default:''"`
	Models       string `gorm:"type:text"`
	Groups       string `gorm:"column:channel_groups;size:512;not null;default:'default'"`
	Priority     int64  `gorm:"not null;default:0"`
	Weight       int64  `gorm:"not null;default:1"`
	ModelMapping string `gorm:"type:text"`
	Status       int    `gorm:"not null;default:1"`
	CreatedTime  int64  `gorm:"not null;default:0"`
	TestTime     int64  `gorm:"not null;default:0"`
	ResponseTime int64  `gorm:"not null;default:0"`
	UsedQuota    int64  `gorm:"not null;default:0"`
	LastError    string `gorm:"type:text"`
}

func (v1Channel) TableName() string { return "channels" }

type v1Ability struct {
	ID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Group     string `gorm:"column:ability_group;size:64;not null;uniqueIndex:idx_ability,priority:1"`
	Model     string `gorm:"size:191;not null;uniqueIndex:idx_ability,priority:2"`
	ChannelID int64  `gorm:"not null;index;uniqueIndex:idx_ability,priority:3"`
	Enabled   bool   `gorm:"not null"`
	Priority  int64  `gorm:"not null;default:0"`
	Weight    int64  `gorm:"not null;default:1"`
}

func (v1Ability) TableName() string { return "abilities" }

type v1ModelPrice struct {
	ID              int64   `gorm:"primaryKey;autoIncrement:false"`
	ModelName       string  `gorm:"size:191;uniqueIndex;not null"`
	InputPrice      float64 `gorm:"not null;default:0"`
	OutputPrice     float64 `gorm:"not null;default:0"`
	CachedPrice     float64 `gorm:"not null;default:0"`
	PerRequestPrice float64 `gorm:"not null;default:0"`
	BillingType     string  `gorm:"size:16;not null;default:'token'"`
	Enabled         bool    `gorm:"not null"`
	CreatedAt       int64   `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt       int64   `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (v1ModelPrice) TableName() string { return "model_prices" }

type v1GroupPrice struct {
	ID        int64   `gorm:"primaryKey;autoIncrement:false"`
	GroupName string  `gorm:"size:64;not null;uniqueIndex:idx_group_model,priority:1"`
	ModelName string  `gorm:"size:191;not null;default:'';uniqueIndex:idx_group_model,priority:2"`
	Discount  float64 `gorm:"not null;default:1"`
	CreatedAt int64   `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt int64   `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (v1GroupPrice) TableName() string { return "group_prices" }

type v1Redemption struct {
	ID           int64  `gorm:"primaryKey;autoIncrement:false"`
	CreatorID    int64  `gorm:"not null;default:0"`
	Name         string `gorm:"size:64;not null"`
	Code         string `gorm:"size:64;uniqueIndex;not null"`
	Status       int    `gorm:"not null;default:1"`
	Quota        int64  `gorm:"not null"`
	CreatedTime  int64  `gorm:"not null;default:0"`
	RedeemedTime int64  `gorm:"not null;default:0"`
	UsedUserID   int64  `gorm:"not null;default:0"`
}

func (v1Redemption) TableName() string { return "redemptions" }

type v1Log struct {
	ID               int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID           int64  `gorm:"not null;index:idx_log_user_time,priority:1"`
	CreatedAt        int64  `gorm:"autoCreateTime:false;not null;index;index:idx_log_user_time,priority:2"`
	Type             int    `gorm:"not null;index"`
	Content          string `gorm:"type:text"`
	Username         string `gorm:"size:64;not null;default:'';index"`
	TokenName        string `gorm:"size:64;not null;default:''"`
	TokenID          int64  `gorm:"not null;default:0"`
	ModelName        string `gorm:"size:191;not null;default:'';index"`
	Group            string `gorm:"column:log_group;size:64;not null;default:''"`
	Quota            int64  `gorm:"not null;default:0"`
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
	CachedTokens     int64  `gorm:"not null;default:0"`
	ChannelID        int64  `gorm:"not null;default:0"`
	RequestID        string `gorm:"size:64;not null;default:''"`
	ElapsedTime      int64  `gorm:"not null;default:0"`
	IsStream         bool   `gorm:"not null;default:false"`
	BillingSource    int    `gorm:"not null;default:0"`
	PlanID           int64  `gorm:"not null;default:0"`
	SessionKey       string `gorm:"size:128;not null;default:''"`
}

func (v1Log) TableName() string { return "logs" }

type v1Option struct {
	Key       string `gorm:"column:option_key;primaryKey;size:128"`
	Value     string `gorm:"type:text"`
	UpdatedAt int64  `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (v1Option) TableName() string { return "options" }

type v1IdSequence struct {
	Name string `gorm:"primaryKey;size:64"`
	Next int64  `gorm:"column:next_value;not null"`
}

func (v1IdSequence) TableName() string { return "id_sequences" }
