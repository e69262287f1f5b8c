// Package planlimit owns the rules of a subscription's rolling usage limits:
// the windows, the time buckets usage is counted in, and the decision
// whether one more call fits, which limit binds and when it frees up. It is
// pure: the clock is always a parameter, and the counts come from the store
// (store.ReserveUsage, store.UsageOf).
//
// Precision. Usage is counted in buckets aligned on the unix epoch: 10
// minutes wide for a period window of up to 24 hours (FineBucket), 3 hours
// for the week and month windows and longer periods (CoarseBucket); each
// use is added to one bucket of each width. A window of length L at time
// now counts every bucket that overlaps (now-L, now]: a bucket [b, b+W)
// counts while b+W > now-L. So every use of the last L counts, and a use
// leaves the window up to one bucket width late, never early: the
// operator's limit is never exceeded within any true window of length L,
// and a user may wait up to W longer than the exact window for a limit to
// free. The two widths bound what one reservation reads: at most 145 fine
// and 241 coarse buckets.
package planlimit

import (
	"errors"
	"fmt"
	"time"
)

// The bucket widths. Ten minutes keeps the default 5-hour window within
// 3.4% of its nominal length; three hours keep a 7-day window within 1.8%
// and a 30-day one within 0.5%, while a month is 241 rows per subscription
// and model.
const (
	FineBucket   = 10 * time.Minute
	CoarseBucket = 3 * time.Hour
)

// maxFinePeriod is the longest period window counted in fine buckets.
const maxFinePeriod = 24 * time.Hour

// DefaultPeriodHours is the period window when a rule leaves PeriodHours 0.
const DefaultPeriodHours = 5

// MaxAmount bounds a token estimate, a settled token count, a limit and a
// counter: 1e15 tokens, far beyond any real call, and small enough that a
// month of full buckets (4,320 × 1e15) still sums within int64.
const MaxAmount int64 = 1_000_000_000_000_000

// MaxPeriodHours bounds PeriodHours: a period longer than the 30-day
// window cannot be counted (older buckets are pruned).
const MaxPeriodHours = 30 * 24

// Window names one of the three rolling windows.
type Window int

// The rolling windows.
const (
	Period Window = iota // PeriodHours hours
	Week                 // 7 days
	Month                // 30 days
)

// Windows lists every window, in the order limits are reported.
var Windows = [...]Window{Period, Week, Month}

// The fixed window lengths.
const (
	WeekLength  = 7 * 24 * time.Hour
	MonthLength = 30 * 24 * time.Hour
)

// Rule is one model's limits in a plan (the ModelLimitRule of the plan's
// model_limits), plus the plan's lifetime token allowance. A zero limit
// means no limit on that measure.
type Rule struct {
	PeriodHours   int64 // the period window in hours; 0 means DefaultPeriodHours
	RequestPeriod int64
	RequestWeek   int64
	RequestMonth  int64
	TokenPeriod   int64
	TokenWeek     int64
	TokenMonth    int64
	// LifetimeTokens is the plan's tokens field: a total allowance over
	// the subscription's life, across all models. 0 means none.
	LifetimeTokens int64
}

// ErrInvalid is returned for a rule or an amount outside the accepted range.
var ErrInvalid = errors.New("invalid plan limit input")

// Validate refuses negative limits, limits beyond MaxAmount and a period
// outside 1..MaxPeriodHours hours (0 is the default).
func (r Rule) Validate() error {
	if r.PeriodHours < 0 || r.PeriodHours > MaxPeriodHours {
		return fmt.Errorf("%w: period_h %d outside 1..%d", ErrInvalid, r.PeriodHours, MaxPeriodHours)
	}
	for _, l := range r.limits() {
		if l.limit < 0 || l.limit > MaxAmount {
			return fmt.Errorf("%w: %s %d outside 0..%d", ErrInvalid, l.name, l.limit, MaxAmount)
		}
	}
	return nil
}

// ValidAmount refuses a token count that is negative or beyond MaxAmount.
func ValidAmount(tokens int64) error {
	if tokens < 0 || tokens > MaxAmount {
		return fmt.Errorf("%w: token count %d outside 0..%d", ErrInvalid, tokens, MaxAmount)
	}
	return nil
}

// Length is the duration of window w under this rule.
func (r Rule) Length(w Window) time.Duration {
	switch w {
	case Week:
		return WeekLength
	case Month:
		return MonthLength
	}
	h := r.PeriodHours
	if h == 0 {
		h = DefaultPeriodHours
	}
	return time.Duration(h) * time.Hour
}

// Measure says what a limit counts.
type Measure int

// The measures.
const (
	Requests Measure = iota
	Tokens
)

// The limit names, as the plan's fields spell them.
const (
	NameRequestPeriod  = "request_period"
	NameRequestWeek    = "request_week"
	NameRequestMonth   = "request_month"
	NameTokenPeriod    = "token_period"
	NameTokenWeek      = "token_week"
	NameTokenMonth     = "token_month"
	NameLifetimeTokens = "tokens"
)

type limitDef struct {
	name    string
	measure Measure
	window  Window
	life    bool // the lifetime allowance, outside every window
	limit   int64
}

// used is what usage u counts against l.
func (l limitDef) used(u Usage) int64 {
	switch {
	case l.life:
		return u.LifetimeTokens
	case l.measure == Requests:
		return u.Windows[l.window].Requests
	}
	return u.Windows[l.window].Tokens
}

// limits lists every limit of r, configured or not, in reporting order:
// requests before tokens, shorter windows first, the lifetime allowance last.
func (r Rule) limits() [7]limitDef {
	return [7]limitDef{
		{NameRequestPeriod, Requests, Period, false, r.RequestPeriod},
		{NameRequestWeek, Requests, Week, false, r.RequestWeek},
		{NameRequestMonth, Requests, Month, false, r.RequestMonth},
		{NameTokenPeriod, Tokens, Period, false, r.TokenPeriod},
		{NameTokenWeek, Tokens, Week, false, r.TokenWeek},
		{NameTokenMonth, Tokens, Month, false, r.TokenMonth},
		{NameLifetimeTokens, Tokens, Month, true, r.LifetimeTokens},
	}
}

// Bucket is the bucket width window w is counted in under this rule.
func (r Rule) Bucket(w Window) time.Duration {
	if w == Period && r.Length(Period) <= maxFinePeriod {
		return FineBucket
	}
	return CoarseBucket
}

// BucketStart is the start (unix seconds) of the bucket of width size
// holding t.
func BucketStart(t time.Time, size time.Duration) int64 {
	sec := int64(size / time.Second)
	return floorDiv(t.Unix(), sec) * sec
}

// WindowStart is the start of the oldest bucket window w counts at now:
// the bucket holding now minus the window's length (it overlaps the
// window).
func (r Rule) WindowStart(w Window, now time.Time) int64 {
	return BucketStart(now.Add(-r.Length(w)), r.Bucket(w))
}

// ResetAt is when a bucket of window w starting at bucketStart stops
// counting: the moment its end is the window's length behind.
func (r Rule) ResetAt(w Window, bucketStart int64) time.Time {
	return time.Unix(bucketStart, 0).Add(r.Bucket(w) + r.Length(w)).UTC()
}

// PruneBefore is the bucket start below which no window counts any more at
// now (the oldest coarse bucket of the month window): older buckets of
// either width can be deleted.
func PruneBefore(now time.Time) int64 { return BucketStart(now.Add(-MonthLength), CoarseBucket) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
