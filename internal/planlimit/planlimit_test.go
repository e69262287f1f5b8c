package planlimit

import (
	"errors"
	"testing"
	"time"
)

// t0 is a bucket boundary plus 3 minutes: a use at t0 lands in the bucket
// starting at t0-3m.
var t0 = time.Date(2026, 11, 2, 10, 3, 0, 0, time.UTC)

// use is one call at t as the store records it: in a bucket of each width.
func use(t time.Time, requests, tokens int64) []Bucket {
	return []Bucket{
		{Width: FineBucket, Start: BucketStart(t, FineBucket), Requests: requests, Tokens: tokens},
		{Width: CoarseBucket, Start: BucketStart(t, CoarseBucket), Requests: requests, Tokens: tokens},
	}
}

func TestBucketAndWindowEdges(t *testing.T) {
	b := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC).Unix()
	coarse := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC).Unix()
	r := Rule{}
	tests := []struct {
		name string
		got  int64
		want int64
	}{
		{"bucket of a time inside it", BucketStart(t0, FineBucket), b},
		{"bucket of its first second", BucketStart(time.Unix(b, 0), FineBucket), b},
		{"bucket of its last second", BucketStart(time.Unix(b+599, 0), FineBucket), b},
		{"next bucket", BucketStart(time.Unix(b+600, 0), FineBucket), b + 600},
		{"coarse buckets start every 3 hours from the epoch", BucketStart(t0, CoarseBucket), coarse},
		{"before the epoch rounds down", BucketStart(time.Unix(-1, 0), FineBucket), -600},
		{"period window starts at the bucket holding now-5h", r.WindowStart(Period, t0), b - 5*3600},
		{"week window starts at the coarse bucket holding now-7d", r.WindowStart(Week, t0), coarse - 7*24*3600},
		{"period reset is bucket end plus 5h", r.ResetAt(Period, b).Unix(), b + 600 + 5*3600},
		{"week reset is coarse bucket end plus 7d", r.ResetAt(Week, coarse).Unix(), coarse + 3*3600 + 7*24*3600},
		{"prune keeps the month window", PruneBefore(t0), coarse - 30*24*3600},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if (Rule{PeriodHours: 24}).Bucket(Period) != FineBucket || (Rule{PeriodHours: 25}).Bucket(Period) != CoarseBucket || r.Bucket(Month) != CoarseBucket {
		t.Fatal("bucket widths of the windows")
	}
}

func TestLengths(t *testing.T) {
	r := Rule{}
	if r.Length(Period) != 5*time.Hour || r.Length(Week) != 7*24*time.Hour || r.Length(Month) != 30*24*time.Hour {
		t.Fatalf("default lengths %v %v %v", r.Length(Period), r.Length(Week), r.Length(Month))
	}
	if (Rule{PeriodHours: 2}).Length(Period) != 2*time.Hour {
		t.Fatal("period_h ignored")
	}
}

// Each limit kind in each window: one use at t0 fills a limit of 1 (or 100
// tokens); the limit refuses until the use's bucket leaves the window, and
// frees exactly then, never earlier.
func TestEachLimitFreesWhenItsBucketLeaves(t *testing.T) {
	tests := []struct {
		name   string
		rule   Rule
		length time.Duration
	}{
		{NameRequestPeriod, Rule{RequestPeriod: 1}, 5 * time.Hour},
		{NameRequestPeriod, Rule{RequestPeriod: 1, PeriodHours: 3}, 3 * time.Hour},
		{NameRequestPeriod, Rule{RequestPeriod: 1, PeriodHours: 48}, 48 * time.Hour},
		{NameRequestWeek, Rule{RequestWeek: 1}, WeekLength},
		{NameRequestMonth, Rule{RequestMonth: 1}, MonthLength},
		{NameTokenPeriod, Rule{TokenPeriod: 100}, 5 * time.Hour},
		{NameTokenWeek, Rule{TokenWeek: 100}, WeekLength},
		{NameTokenMonth, Rule{TokenMonth: 100}, MonthLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buckets := use(t0, 1, 100)
			w := Period
			switch tt.length {
			case WeekLength:
				w = Week
			case MonthLength:
				w = Month
			}
			width := tt.rule.Bucket(w)
			reset := time.Unix(BucketStart(t0, width), 0).Add(width + tt.length)
			for _, now := range []time.Time{t0, t0.Add(tt.length), reset.Add(-time.Second)} {
				d := Check(tt.rule, Tally(tt.rule, buckets, now), 1, now)
				if d.Fits {
					t.Fatalf("at %v: fits although %s is used up", now, tt.name)
				}
				if d.Binding.Name != tt.name || d.Binding.Remaining != 0 || !d.Binding.Reset.Equal(reset) {
					t.Fatalf("at %v: binding %+v, want %s freeing at %v", now, d.Binding, tt.name, reset)
				}
			}
			if d := Check(tt.rule, Tally(tt.rule, buckets, reset), 1, reset); !d.Fits {
				t.Fatalf("at the reset time still refused by %+v", d.Binding)
			}
		})
	}
}

func TestTokenEstimates(t *testing.T) {
	r := Rule{TokenPeriod: 1000}
	used := func(n int64) Usage { return Tally(r, use(t0, 1, n), t0) }
	tests := []struct {
		name     string
		used     int64
		estimate int64
		fits     bool
	}{
		{"estimate equal to what is left", 600, 400, true},
		{"estimate over what is left", 600, 401, false},
		{"estimate larger than the limit itself", 0, 1001, false},
		{"zero estimate with tokens left", 999, 0, true},
		{"zero estimate when nothing is left", 1000, 0, false},
		{"overrun usage beyond the limit", 5000, 1, false},
		{"huge estimate", 0, MaxAmount, false},
	}
	for _, tt := range tests {
		d := Check(r, used(tt.used), tt.estimate, t0)
		if d.Fits != tt.fits {
			t.Errorf("%s: fits %v, want %v (%+v)", tt.name, d.Fits, tt.fits, d.Binding)
		}
		if !tt.fits && (d.Binding.Name != NameTokenPeriod || d.Binding.Used != tt.used) {
			t.Errorf("%s: binding %+v", tt.name, d.Binding)
		}
	}
}

func TestBindingIsTheLimitThatFreesLast(t *testing.T) {
	old := t0.Add(-4 * time.Hour) // in the period and the week
	buckets := use(old, 3, 10)
	r := Rule{RequestPeriod: 3, RequestWeek: 3, TokenMonth: 100}
	d := Check(r, Tally(r, buckets, t0), 1, t0)
	if d.Fits || d.Binding.Name != NameRequestWeek || !d.Binding.Reset.Equal(r.ResetAt(Week, BucketStart(old, CoarseBucket))) {
		t.Fatalf("binding %+v, want request_week", d.Binding)
	}
	r.LifetimeTokens = 10
	u := Tally(r, buckets, t0)
	u.LifetimeTokens = 10
	d = Check(r, u, 1, t0)
	if d.Fits || d.Binding.Name != NameLifetimeTokens || !d.Binding.Reset.IsZero() || !d.Binding.Lifetime {
		t.Fatalf("binding %+v, want the lifetime allowance, never freeing", d.Binding)
	}
}

// The header statuses are the tightest limit of each measure, counting the
// call being admitted.
func TestTightestLimitsCountTheCall(t *testing.T) {
	r := Rule{RequestPeriod: 10, RequestMonth: 100, TokenWeek: 1000, TokenMonth: 5000}
	buckets := use(t0.Add(-2*24*time.Hour), 95, 100)
	d := Check(r, Tally(r, buckets, t0), 50, t0)
	if !d.Fits || d.Requests == nil || d.Tokens == nil {
		t.Fatalf("decision %+v", d)
	}
	if d.Requests.Name != NameRequestMonth || d.Requests.Used != 96 || d.Requests.Remaining != 4 {
		t.Fatalf("requests %+v, want request_month 96 used, 4 left", *d.Requests)
	}
	if d.Tokens.Name != NameTokenWeek || d.Tokens.Used != 150 || d.Tokens.Remaining != 850 {
		t.Fatalf("tokens %+v, want token_week 150 used, 850 left", *d.Tokens)
	}
	// request_period held nothing before: its reset is the current bucket's.
	for _, s := range Report(r, Tally(r, buckets, t0)) {
		if s.Name == NameRequestPeriod && (s.Used != 0 || !s.Reset.IsZero()) {
			t.Fatalf("empty period window %+v", s)
		}
	}
	if d := Check(Rule{}, Usage{}, MaxAmount, t0); !d.Fits || d.Requests != nil || d.Tokens != nil {
		t.Fatalf("no limits: %+v", d)
	}
}

func TestTallyCountsEachWindowFromItsWidth(t *testing.T) {
	r := Rule{}
	now := t0
	fine := func(start, n int64) Bucket {
		return Bucket{Width: FineBucket, Start: start, Requests: n, Tokens: 10 * n}
	}
	coarse := func(start, n int64) Bucket {
		return Bucket{Width: CoarseBucket, Start: start, Requests: n, Tokens: 10 * n}
	}
	period, week, month := r.WindowStart(Period, now), r.WindowStart(Week, now), r.WindowStart(Month, now)
	buckets := []Bucket{
		fine(period-600, 1),                                // left the period window
		fine(period, 2),                                    // oldest period bucket
		fine(BucketStart(now, FineBucket), 4),              // now
		fine(BucketStart(now, FineBucket)+600, 8),          // the future
		coarse(month-3*3600, 16),                           // left every window
		coarse(month, 32),                                  // oldest month bucket
		coarse(week, 64),                                   // oldest week bucket
		coarse(BucketStart(now, CoarseBucket), 128),        // now
		coarse(BucketStart(now, CoarseBucket)+3*3600, 256), // the future
	}
	u := Tally(r, buckets, now)
	want := [3]Count{
		{Requests: 6, Tokens: 60, OldestRequest: period, OldestToken: period},
		{Requests: 192, Tokens: 1920, OldestRequest: week, OldestToken: week},
		{Requests: 224, Tokens: 2240, OldestRequest: month, OldestToken: month},
	}
	if u.Windows != want {
		t.Fatalf("tally %+v\nwant  %+v", u.Windows, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		rule Rule
		ok   bool
	}{
		{Rule{}, true},
		{Rule{PeriodHours: 1, RequestPeriod: MaxAmount, LifetimeTokens: MaxAmount}, true},
		{Rule{PeriodHours: MaxPeriodHours}, true},
		{Rule{PeriodHours: -1}, false},
		{Rule{PeriodHours: MaxPeriodHours + 1}, false},
		{Rule{RequestWeek: -1}, false},
		{Rule{TokenMonth: MaxAmount + 1}, false},
		{Rule{LifetimeTokens: -5}, false},
	}
	for _, tt := range tests {
		err := tt.rule.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%+v: %v", tt.rule, err)
		}
	}
	for amount, ok := range map[int64]bool{0: true, MaxAmount: true, -1: false, MaxAmount + 1: false} {
		if err := ValidAmount(amount); (err == nil) != ok {
			t.Errorf("amount %d: %v", amount, err)
		}
	}
}

// A call that accepts between least and most tokens holds most when the
// tightest token limit has it, else what that limit has left, never below
// least (then Check refuses it). The lifetime allowance counts as a token
// limit; request limits do not bound tokens.
func TestFitTakesWhatTheTightestLimitLeaves(t *testing.T) {
	r := Rule{TokenPeriod: 1000, TokenMonth: 5000, RequestPeriod: 3, LifetimeTokens: 10_000}
	at := func(period, lifetime int64) Usage {
		u := Tally(r, use(t0, 1, period), t0)
		u.LifetimeTokens = lifetime
		return u
	}
	for _, tt := range []struct {
		name              string
		u                 Usage
		least, most, want int64
		fits              bool
	}{
		{"room for most", at(0, 0), 10, 400, 400, true},
		{"the period's rest", at(700, 700), 10, 400, 300, true},
		{"exactly least left", at(990, 990), 10, 400, 10, true},
		{"less than least left", at(995, 995), 10, 400, 10, false},
		{"nothing left", at(1000, 1000), 10, 400, 10, false},
		{"the lifetime allowance binds", at(0, 9_900), 10, 400, 100, true},
		{"fixed estimate", at(700, 700), 400, 400, 400, false},
	} {
		got := Fit(r, tt.u, tt.least, tt.most)
		if got != tt.want {
			t.Errorf("%s: Fit %d, want %d", tt.name, got, tt.want)
		}
		if d := Check(r, tt.u, got, t0); d.Fits != tt.fits {
			t.Errorf("%s: fits %v, want %v", tt.name, d.Fits, tt.fits)
		}
	}
	// Usage two days back is outside the period but inside the month.
	if n := Fit(r, Tally(r, use(t0.Add(-48*time.Hour), 1, 4_800), t0), 10, 400); n != 200 {
		t.Errorf("the month binds: Fit %d, want 200", n)
	}
	if n := Fit(Rule{RequestPeriod: 1}, Usage{}, 1, 1<<40); n != 1<<40 {
		t.Errorf("no token limit: Fit %d, want most", n)
	}
}

// A call larger than a rolling limit itself, against an empty window, is
// refused naming that limit with a reset (when a use counted now would
// leave the window), not as if it never freed: only the lifetime
// allowance never frees.
func TestEmptyWindowRefusalHasAReset(t *testing.T) {
	r := Rule{TokenPeriod: 3000}
	d := Check(r, Usage{}, 16_400, t0)
	want := r.ResetAt(Period, BucketStart(t0, FineBucket))
	if d.Fits || d.Binding.Name != NameTokenPeriod || d.Binding.Lifetime || !d.Binding.Reset.Equal(want) {
		t.Fatalf("binding %+v, want token_period freeing at %s", d.Binding, want)
	}
}
