package store

// Stored types. They carry no json tags on purpose: handlers copy what a
// response may show into their own types, so password hashes, key hashes and
// channel keys cannot be serialised by accident (docs/architecture.md, Conventions).
//
// Column names avoid SQL reserved words (group, key) so raw SQL needs no
// per-dialect quoting. Changing a column here needs a new migration.

// User is a row of users. Status: 1 enabled, 2 disabled, 3 deleted (soft).
type User struct {
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
	AccessToken    *string `gorm:"size:64;uniqueIndex"` // nil until generated
	Group          string  `gorm:"column:user_group;size:64;not null;default:'default'"`
	AffCode        string  `gorm:"size:32;uniqueIndex;not null"`
	SessionVersion int64   `gorm:"not null;default:1"` // bumped to end all sessions
	// GitHubID and OidcID are the subjects of the sign-in providers bound
	// to the user (nil: none); InviterID the user whose aff_code it
	// registered with (0: none). Migration 0031.
	GitHubID  *string `gorm:"column:github_id;size:128;uniqueIndex:idx_users_github_id"`
	OidcID    *string `gorm:"column:oidc_id;size:255;uniqueIndex:idx_users_oidc_id"`
	InviterID int64   `gorm:"column:inviter_id;not null;default:0;index"`
	// InviteRewarded is set, with the amount in InviteReward, when this
	// user's first paid order credited the inviter (invites.go).
	InviteRewarded bool  `gorm:"not null;default:false"`
	InviteReward   int64 `gorm:"not null;default:0"`
	CreatedAt      int64 `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt      int64 `gorm:"autoUpdateTime:false;not null;default:0"`
}

// Token is an API key (sk-…). Only the SHA-256 of the key is kept, plus a
// short prefix and suffix to show it masked.
type Token struct {
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
	// Rate limits of the key (docs/decisions/rate-limits.md); 0 = none.
	RPMLimit         int64 `gorm:"column:rpm_limit;not null;default:0"`
	TPMLimit         int64 `gorm:"column:tpm_limit;not null;default:0"`
	ConcurrencyLimit int64 `gorm:"column:concurrency_limit;not null;default:0"`
}

// Channel is an upstream route. Key is the upstream credential: write-only
// through the API.
type Channel struct {
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
	Setting      string `gorm:"type:text"` // JSON object of channel options (channel.NormalizeSetting)
	// Other is the type's own setting (one-api's "other"): Azure's
	// api-version, Vertex's region; empty for the other types.
	Other        string `gorm:"column:other;size:512;not null;default:''"`
	Status       int    `gorm:"not null;default:1"`
	CreatedTime  int64  `gorm:"not null;default:0"`
	TestTime     int64  `gorm:"not null;default:0"`
	ResponseTime int64  `gorm:"not null;default:0"` // ms
	UsedQuota    int64  `gorm:"not null;default:0"`
	LastError    string `gorm:"type:text"`
	// DisabledKeys are the keys of the pool taken out after a refusal
	// (channel.EncodeDisabledKeys; empty = none).
	DisabledKeys string `gorm:"type:text"`
}

// Ability says that a channel serves a model for a group. Abilities are
// derived from channels and rebuilt in the channel's transaction.
type Ability struct {
	ID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Group     string `gorm:"column:ability_group;size:64;not null;uniqueIndex:idx_ability,priority:1"`
	Model     string `gorm:"size:191;not null;uniqueIndex:idx_ability,priority:2"`
	ChannelID int64  `gorm:"not null;index;uniqueIndex:idx_ability,priority:3"`
	Enabled   bool   `gorm:"not null"`
	Priority  int64  `gorm:"not null;default:0"`
	Weight    int64  `gorm:"not null;default:1"`
}

// ModelPrice is the price of one model: CNY per million tokens or per
// request. Tiers is the JSON array of context-length tiers (EncodeTiers),
// empty when the model has none.
type ModelPrice struct {
	ID                int64   `gorm:"primaryKey;autoIncrement:false"`
	ModelName         string  `gorm:"size:191;uniqueIndex;not null"`
	InputPrice        float64 `gorm:"not null;default:0"`
	OutputPrice       float64 `gorm:"not null;default:0"`
	CachedPrice       float64 `gorm:"not null;default:0"`
	CacheWritePrice   float64 `gorm:"not null;default:0"`
	CacheWrite1hPrice float64 `gorm:"column:cache_write_1h_price;not null;default:0"`
	Tiers             string  `gorm:"type:text"`
	PerRequestPrice   float64 `gorm:"not null;default:0"`
	BillingType       string  `gorm:"size:16;not null;default:'token'"`
	MaxOutputTokens   int64   `gorm:"not null;default:0"` // 0 = unknown
	Enabled           bool    `gorm:"not null"`
	CreatedAt         int64   `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt         int64   `gorm:"autoUpdateTime:false;not null;default:0"`
}

// GroupPrice is a discount multiplier for a group, for one model or (with an
// empty ModelName) for all models of the group.
type GroupPrice struct {
	ID        int64   `gorm:"primaryKey;autoIncrement:false"`
	GroupName string  `gorm:"size:64;not null;uniqueIndex:idx_group_model,priority:1"`
	ModelName string  `gorm:"size:191;not null;default:'';uniqueIndex:idx_group_model,priority:2"`
	Discount  float64 `gorm:"not null;default:1"`
	CreatedAt int64   `gorm:"autoCreateTime:false;not null;default:0"`
	UpdatedAt int64   `gorm:"autoUpdateTime:false;not null;default:0"`
}

// Redemption is a redemption code. Status: 1 unused, 2 disabled, 3 used.
// The code is kept in clear: admins hand it out and search by it.
type Redemption struct {
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

// Billing sources of a consume log (Log.BillingSource): the call was paid
// from the balance or by a subscription (PlanID names its plan).
const (
	BillingSourceBalance = 0
	BillingSourcePlan    = 1
)

// Log is a usage or audit record. Type: 1 top-up, 2 consume, 3 admin, 4 system,
// 5 error (a failed relay call, LogError).
type Log struct {
	ID               int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID           int64  `gorm:"not null;index:idx_log_user_time,priority:1"`
	CreatedAt        int64  `gorm:"autoCreateTime:false;not null;index;index:idx_log_user_time,priority:2"`
	Type             int    `gorm:"not null"` // idx_log_type_time (migration 0007; 0035 dropped the type-only index)
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
	// The cache writes of the call, 5-minute and 1-hour (part of
	// PromptTokens, as CachedTokens, the cache reads, are).
	CacheWriteTokens   int64  `gorm:"not null;default:0"`
	CacheWrite1hTokens int64  `gorm:"column:cache_write_1h_tokens;not null;default:0"`
	ChannelID          int64  `gorm:"not null;default:0"`
	RequestID          string `gorm:"size:64;not null;default:''"`
	ElapsedTime        int64  `gorm:"not null;default:0"`
	IsStream           bool   `gorm:"not null;default:false"`
	BillingSource      int    `gorm:"not null;default:0"`
	PlanID             int64  `gorm:"not null;default:0"`
	SessionKey         string `gorm:"size:128;not null;default:''"`
	// Error rows (LogError) only: the HTTP status the client got, or the
	// upstream answered for an attempt (0: no answer); the relay's error
	// code; the upstream's message with secrets removed (admins only).
	Status          int    `gorm:"not null;default:0"`
	ErrorCode       string `gorm:"size:64;not null;default:''"`
	UpstreamMessage string `gorm:"type:text"`
}

// Option is one runtime setting, kept as text.
type Option struct {
	Key       string `gorm:"column:option_key;primaryKey;size:128"`
	Value     string `gorm:"type:text"`
	UpdatedAt int64  `gorm:"autoUpdateTime:false;not null;default:0"`
}

// idSequence is the per-table counter behind row ids (ids.go).
type idSequence struct {
	Name string `gorm:"primaryKey;size:64"`
	Next int64  `gorm:"column:next_value;not null"`
}

func (idSequence) TableName() string { return "id_sequences" }

// Reservation is money held for a call in flight: deleted by the call's
// settlement, or released by the janitor when its process died.
type Reservation struct {
	ID           int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"not null"`
	TokenID      int64 `gorm:"not null;default:0"`
	TokenLimited bool  `gorm:"not null"`
	Amount       int64 `gorm:"not null"`
	CreatedAt    int64 `gorm:"autoCreateTime:false;not null;index"`
	// LeaseID is the billing lease of the process that made the hold (0:
	// made before leases existed, or on SQLite); see leases.go.
	LeaseID int64 `gorm:"not null;default:0;index"`
}

// Plan is a plan of the catalogue. ModelLimits is canonical JSON
// (plan.Limits.Canonical), Features a JSON array of strings. Status: 1
// listed, 0 unlisted.
type Plan struct {
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

// UserPlan is a subscription: user UserID holds plan PlanID from StartTime
// to EndTime. Status: 1 active, 2 expired, 3 cancelled; an active row past
// its end reads as expired (plan.Status) until the expiry job writes it.
type UserPlan struct {
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

// Order is a plan order (Type 1) or a top-up order (Type 2) (spec: Order;
// migration 0011). AmountCents is the price in fen: the API answers it as
// CNY (amount), payment notifications are compared with it exactly.
// BonusQuota is what a top-up credits on activation; Mode and ReplacesID
// are a plan order's purchase mode (stack, price_diff) and, for an
// upgrade, the subscription its activation ends. PrepayID is the payment
// channel's id of the pre-payment (the pay answer's trade_no), PayTradeNo
// the provider's transaction id once paid (or what an admin entered).
type Order struct {
	ID          int64  `gorm:"primaryKey;autoIncrement:false"`
	Type        int    `gorm:"not null"`
	Source      int    `gorm:"not null;default:1"`
	OrderNo     string `gorm:"size:32;not null"`
	UserID      int64  `gorm:"not null"`
	PlanID      int64  `gorm:"not null;default:0"`
	PlanInfo    string `gorm:"type:text"`
	AmountCents int64  `gorm:"not null;default:0"`
	BonusQuota  int64  `gorm:"not null;default:0"`
	Mode        string `gorm:"size:16;not null;default:''"`
	ReplacesID  int64  `gorm:"not null;default:0"`
	Status      int    `gorm:"not null;default:0"`
	PayStatus   int    `gorm:"not null;default:0"`
	PayMethod   string `gorm:"size:16;not null;default:''"`
	PayTradeNo  string `gorm:"size:128;not null;default:''"`
	PrepayID    string `gorm:"size:128;not null;default:''"`
	CreateTime  int64  `gorm:"not null;default:0"`
	UpdateTime  int64  `gorm:"not null;default:0"`
	PayTime     int64  `gorm:"not null;default:0"`
}

func (Order) TableName() string { return "orders" }

// ReceivedPayment is money received for an order (migration 0027): written
// in the transaction that activates the order with a payment (not pay_method
// free, amount > 0), keyed by the order's id, and kept when root deletes
// the order, so revenue stays what was received. RefundTime is set when
// the order is refunded (0: not refunded); CreditQuota is the top-up's
// credited quota (0 for a plan).
type ReceivedPayment struct {
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

func (ReceivedPayment) TableName() string { return "received_payments" }
