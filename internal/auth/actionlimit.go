package auth

import (
	"sync"
	"time"
)

// MsgTooManyRequests refuses an account action (registration, a mailed
// code, a reset) beyond its rate limit.
const MsgTooManyRequests = "请求过于频繁,请稍后再试"

// ActionLimit is how many attempts of one action a key (a client address,
// an email) may make in a window.
type ActionLimit struct {
	Max    int
	Window time.Duration
}

// ActionLimiter counts attempts of account actions per key in fixed
// windows, in memory: per node, like LoginThrottle without Redis. Every
// attempt counts, refused ones too, so guessing codes costs attempts. It is
// safe for concurrent use; keys are swept once their window ended.
type ActionLimiter struct {
	now func() time.Time

	mu      sync.Mutex
	windows map[string]actionWindow
	calls   int
}

type actionWindow struct {
	start time.Time
	count int
	ends  time.Time
}

// NewActionLimiter reads the time from now (time.Now when nil).
func NewActionLimiter(now func() time.Time) *ActionLimiter {
	if now == nil {
		now = time.Now
	}
	return &ActionLimiter{now: now, windows: map[string]actionWindow{}}
}

// Allow counts one attempt under each key and reports whether all stayed
// within lim. keys are whole counter names ("register|ip|1.2.3.4"); an
// attempt refused under one key still counts under the others.
func (l *ActionLimiter) Allow(lim ActionLimit, keys ...string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls%256 == 0 || len(l.windows) > defaultMaxKeys {
		for k, w := range l.windows {
			if !now.Before(w.ends) {
				delete(l.windows, k)
			}
		}
	}
	ok := true
	for _, k := range keys {
		if len(k) > 2*maxKeyPart {
			k = k[:2*maxKeyPart]
		}
		w := l.windows[k]
		if !now.Before(w.ends) {
			w = actionWindow{start: now, ends: now.Add(lim.Window)}
		}
		w.count++
		l.windows[k] = w
		if w.count > lim.Max {
			ok = false
		}
	}
	return ok
}
