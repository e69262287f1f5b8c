package plan

import "github.com/modelgate/modelgate/internal/textfield"

// Subscription statuses (docs/decisions/plans.md).
const (
	SubActive    = 1
	SubExpired   = 2
	SubCancelled = 3
)

// Billing types of a subscription: the unit the subscription was sold in,
// shown in the console and reports. Every limit of the plan applies either
// way (docs/decisions/plans.md).
const (
	BillingToken   = "token"
	BillingRequest = "request"
	// DefaultBilling is the billing type of a create request without one.
	DefaultBilling = BillingToken
)

// MaxEndTime bounds a subscription's end: the last second of year 9999.
const MaxEndTime = 253402300799

// Messages of the subscription fields.
const (
	MsgSubStatusInvalid = "订阅状态只能是 1(生效)、2(已过期)或 3(已取消)"
	MsgBillingType      = "订阅计费类型只能是 token 或 request"
	MsgEndTime          = "结束时间必须晚于开始时间,且不晚于 9999 年"
	MsgSubDuration      = "订阅天数不能超过 3650"
)

// notesText is an admin's notes on a subscription (column: store.UserPlan).
var notesText = textfield.Field{Label: "备注", MaxChars: 500, Multiline: true}

// Status is the status of a subscription stored as stored, ending at end,
// read at now: an active one whose end has passed is expired, wherever it
// is read, before the expiry job writes it down.
func Status(stored int, end, now int64) int {
	if stored == SubActive && end <= now {
		return SubExpired
	}
	return stored
}

// ValidateSubStatus checks a status an admin sets.
func ValidateSubStatus(s int) string {
	if s < SubActive || s > SubCancelled {
		return MsgSubStatusInvalid
	}
	return ""
}

// ValidateBillingType checks a subscription's billing type.
func ValidateBillingType(t string) string {
	if t != BillingToken && t != BillingRequest {
		return MsgBillingType
	}
	return ""
}

// ValidateEndTime checks an end time against the subscription's start.
func ValidateEndTime(start, end int64) string {
	if end <= start || end > MaxEndTime {
		return MsgEndTime
	}
	return ""
}

// ValidateNotes checks an admin's notes.
func ValidateNotes(s string) string { return notesText.Validate(s) }

// SubscriptionDays is the length of a new subscription: the request's
// duration_days when positive, else the plan's.
func SubscriptionDays(requested, planDays int) (int, string) {
	if requested <= 0 {
		return planDays, ""
	}
	if requested > MaxDurationDays {
		return 0, MsgSubDuration
	}
	return requested, ""
}
