// Package dashboard holds the rules of the admin dashboard (spec: Admin
// dashboard): which windows a range names, the top-users limit, and how
// order amounts in fen become the CNY figures of revenue. The figures
// themselves are summed in internal/store (dashboard.go) from the usage
// rollups and the orders table.
package dashboard

// Ranges of the dashboard (query range).
const (
	RangeToday   = "today"
	Range7d      = "7d"
	Range30d     = "30d"
	RangeAll     = "all"
	DefaultRange = Range7d
)

// Limits of the top-users list (query limit).
const (
	DefaultLimit = 20
	MaxLimit     = 200
)

// ChartDays caps the charts of range all: the last 30 UTC days, today
// included (spec).
const ChartDays = 30

// daySeconds is one UTC day. Days are UTC everywhere (spec), so a day
// starts at a multiple of 86400.
const daySeconds = 86400

// Messages of the dashboard's query parameters.
const (
	MsgRangeInvalid = "参数 range 只能是 today、7d、30d 或 all"
	MsgLimitInvalid = "参数 limit 必须是 1 到 200 之间的整数"
)

// ParseRange checks a range parameter; "" is the default 7d. It returns
// the range and "" or a message for an unknown one.
func ParseRange(s string) (string, string) {
	switch s {
	case "":
		return DefaultRange, ""
	case RangeToday, Range7d, Range30d, RangeAll:
		return s, ""
	}
	return "", MsgRangeInvalid
}

// ValidLimit checks the top-users limit: "" when 1..MaxLimit.
func ValidLimit(n int64) string {
	if n < 1 || n > MaxLimit {
		return MsgLimitInvalid
	}
	return ""
}

// DayStart is 00:00 UTC of the day holding the Unix time now.
func DayStart(now int64) int64 {
	d := now - now%daySeconds
	if now < 0 && now%daySeconds != 0 {
		d -= daySeconds
	}
	return d
}

// Days is the start of a window of n whole UTC days ending with today's:
// today and the n-1 days before it, as the user dashboard's 7 days.
func Days(n int, now int64) int64 {
	return DayStart(now) - int64(n-1)*daySeconds
}

// Since is the first second of range r at now; 0 for all (no lower bound).
// Windows are whole UTC days: today is since 00:00 UTC, 7d and 30d are
// today and the 6 or 29 days before it.
func Since(r string, now int64) int64 {
	switch r {
	case RangeToday:
		return Days(1, now)
	case Range7d:
		return Days(7, now)
	case Range30d:
		return Days(30, now)
	}
	return 0
}

// ChartSince is Since with all capped to the last ChartDays days.
func ChartSince(r string, now int64) int64 {
	if r == RangeAll {
		return Days(ChartDays, now)
	}
	return Since(r, now)
}

// Yuan is an amount in fen as the CNY float the API answers. Sums are
// kept in integer fen until this last step, so a total is exact to the
// fen before it becomes a float.
func Yuan(fen int64) float64 {
	return float64(fen) / 100
}
