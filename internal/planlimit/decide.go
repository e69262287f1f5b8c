package planlimit

import "time"

// Count is the usage one window holds for a subscription and model.
// OldestRequest and OldestToken are the start of the oldest counted bucket
// holding requests or tokens (0 when there is none): when it leaves the
// window, usage of that measure frees up.
type Count struct {
	Requests, Tokens           int64
	OldestRequest, OldestToken int64
}

// Usage is what a subscription has used of one model in each window, and
// in total over its life (all models).
type Usage struct {
	Windows        [len(Windows)]Count
	LifetimeTokens int64
}

// Bucket is one stored usage bucket.
type Bucket struct {
	Width            time.Duration // FineBucket or CoarseBucket
	Start            int64         // unix seconds, a multiple of Width
	Requests, Tokens int64
}

// Tally sums buckets into the windows of r at now, each window from the
// buckets of its width. Buckets older than the window, or of the future,
// are ignored. LifetimeTokens is left 0: it is not kept in buckets.
func Tally(r Rule, buckets []Bucket, now time.Time) Usage {
	var u Usage
	for _, w := range Windows {
		width := r.Bucket(w)
		from, current := r.WindowStart(w, now), BucketStart(now, width)
		c := &u.Windows[w]
		for _, b := range buckets {
			if b.Width != width || b.Start < from || b.Start > current {
				continue
			}
			c.Requests += b.Requests
			c.Tokens += b.Tokens
			if b.Requests > 0 && (c.OldestRequest == 0 || b.Start < c.OldestRequest) {
				c.OldestRequest = b.Start
			}
			if b.Tokens > 0 && (c.OldestToken == 0 || b.Start < c.OldestToken) {
				c.OldestToken = b.Start
			}
		}
	}
	return u
}

// Status is one configured limit and where usage stands against it.
type Status struct {
	Name      string // request_period, …, token_month, or tokens (lifetime)
	Measure   Measure
	Window    Window // meaningless for the lifetime allowance
	Lifetime  bool
	Limit     int64
	Used      int64
	Remaining int64 // Limit - Used, never below 0
	// Reset is when the oldest counted usage leaves the window, so the
	// limit frees up (at least partly); zero when the window holds no
	// usage, and for the lifetime allowance, which never frees.
	Reset time.Time
}

// Decision is the answer for one more call.
type Decision struct {
	Fits bool
	// Binding is the limit that refuses the call: when several do, the one
	// that frees last (the lifetime allowance first of all), since the call
	// cannot fit before then. Zero when the call fits.
	Binding Status
	// Requests and Tokens are the tightest configured request and token
	// limit (least remaining), counting this call when it fits: what the
	// rate-limit headers report. Nil when no limit of that measure is set.
	Requests, Tokens *Status
}

// Check decides whether one more call with an estimate of tokens fits the
// limits of r, given usage u at now. A request limit refuses when it has
// no request left; a token limit refuses when it has no token left or
// fewer than the estimate. tokens must be valid (ValidAmount).
func Check(r Rule, u Usage, tokens int64, now time.Time) Decision {
	statuses := Report(r, u)
	var d Decision
	d.Fits = true
	for _, s := range statuses {
		need := int64(1)
		if s.Measure == Tokens {
			need = max(tokens, 1)
		}
		if s.Remaining >= need {
			continue
		}
		if s.Reset.IsZero() && !s.Lifetime {
			// An empty window that cannot hold the call (larger than the
			// limit itself): name when a use counted now would leave it,
			// as the headers of a first use do.
			s.Reset = r.ResetAt(s.Window, BucketStart(now, r.Bucket(s.Window)))
		}
		if d.Fits || freesLater(s, d.Binding) {
			d.Binding = s
		}
		d.Fits = false
	}
	if !d.Fits {
		return d
	}
	for i := range statuses {
		s := &statuses[i]
		add := int64(1)
		if s.Measure == Tokens {
			add = tokens
		}
		s.Used += add
		s.Remaining -= add
		if add > 0 && s.Reset.IsZero() && !s.Lifetime {
			s.Reset = r.ResetAt(s.Window, BucketStart(now, r.Bucket(s.Window)))
		}
		tightest := &d.Requests
		if s.Measure == Tokens {
			tightest = &d.Tokens
		}
		if *tightest == nil || s.Remaining < (*tightest).Remaining {
			*tightest = s
		}
	}
	return d
}

// Room is the most tokens one more call can hold under r with usage u: the
// least any configured token limit (the lifetime allowance included) has
// left, MaxAmount when no token limit is set.
func Room(r Rule, u Usage) int64 {
	room := int64(MaxAmount)
	for _, l := range r.limits() {
		if l.limit > 0 && l.measure == Tokens {
			room = min(room, max(l.limit-l.used(u), 0))
		}
	}
	return room
}

// Fit is the tokens a call that can take between least and most holds
// under r with usage u: most when it fits, else what the tightest token
// limit has left, never below least (which Check then refuses when even
// that does not fit). A call with a fixed estimate has least = most.
func Fit(r Rule, u Usage, least, most int64) int64 {
	return max(min(most, Room(r, u)), least)
}

// freesLater reports whether a frees after b: never (the lifetime
// allowance) is the latest.
func freesLater(a, b Status) bool {
	switch {
	case b.Lifetime:
		return false
	case a.Lifetime:
		return true
	}
	return a.Reset.After(b.Reset)
}

// Report lists every configured limit of r (limit > 0) with usage u:
// what the usage routes show.
func Report(r Rule, u Usage) []Status {
	limits := r.limits()
	out := make([]Status, 0, len(limits))
	for _, l := range limits {
		if l.limit <= 0 {
			continue
		}
		s := Status{Name: l.name, Measure: l.measure, Window: l.window, Lifetime: l.life, Limit: l.limit, Used: l.used(u)}
		c := u.Windows[l.window]
		switch {
		case l.life: // never frees: no reset
		case l.measure == Requests && c.OldestRequest != 0:
			s.Reset = r.ResetAt(l.window, c.OldestRequest)
		case l.measure == Tokens && c.OldestToken != 0:
			s.Reset = r.ResetAt(l.window, c.OldestToken)
		}
		s.Remaining = max(s.Limit-s.Used, 0)
		out = append(out, s)
	}
	return out
}
