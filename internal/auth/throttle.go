package auth

import (
	"strings"
	"sync"
	"time"
)

// MsgTooManyAttempts is the user-facing message when a login is throttled.
const MsgTooManyAttempts = "登录失败次数过多,请稍后再试"

// Throttle rules. Each counts failed logins in a sliding window.
//
//   - pairLimit per (username, ip) stops one attacker guessing one account.
//   - ipLimit per ip stops one attacker spraying many accounts.
//   - userLimit per username stops a distributed guess at one account. It is
//     high and expires with the window, so a stranger cannot lock root out
//     for long; the pair limit is what blocks a single attacker.
const (
	throttleWindow = 15 * time.Minute
	pairLimit      = 5
	ipLimit        = 30
	userLimit      = 50
)

// Memory bounds: entries are swept every pruneEvery calls, the map holds at
// most defaultMaxKeys keys, and key parts are clipped so that long usernames
// cannot grow it either.
const (
	pruneEvery     = 256
	defaultMaxKeys = 100_000
	maxKeyPart     = 128
)

// throttleKey names one counter. A struct, not a joined string, so no
// username or ip can be crafted to collide with another counter's key.
type throttleKey struct {
	kind     byte // 'p' pair, 'i' ip, 'u' username
	username string
	ip       string
}

func (k throttleKey) limit() int {
	switch k.kind {
	case 'p':
		return pairLimit
	case 'i':
		return ipLimit
	default:
		return userLimit
	}
}

// LoginThrottle limits failed logins in memory. The zero value is not usable;
// call NewLoginThrottle. It is safe for concurrent use. Counts are per
// process: behind several nodes an attacker gets the limits once per node.
type LoginThrottle struct {
	now func() time.Time

	mu sync.Mutex
	// fails holds, per counter, the unix-nano times of recent failures, oldest
	// first. Only the last limit() times can matter, so no more are kept.
	fails   map[throttleKey][]int64
	calls   int
	maxKeys int
}

// NewLoginThrottle returns an empty throttle reading the time from now, or
// from time.Now when now is nil.
func NewLoginThrottle(now func() time.Time) *LoginThrottle {
	if now == nil {
		now = time.Now
	}
	return &LoginThrottle{now: now, fails: make(map[throttleKey][]int64), maxKeys: defaultMaxKeys}
}

// Allow reports whether a login for username from ip may be attempted now.
// When it may not, retryAfter is how long until it may.
func (t *LoginThrottle) Allow(username, ip string) (ok bool, retryAfter time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, cutoff := t.tick()
	for _, k := range keysFor(username, ip) {
		ts := t.trim(k, cutoff)
		if n := k.limit(); len(ts) >= n {
			// The count drops below the limit when the n-th newest failure
			// leaves the window.
			retryAfter = max(retryAfter, time.Duration(ts[len(ts)-n]-cutoff))
		}
	}
	return retryAfter == 0, retryAfter
}

// Failed records a failed login for username from ip against all three rules.
func (t *LoginThrottle) Failed(username, ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, cutoff := t.tick()
	for _, k := range keysFor(username, ip) {
		ts := t.trim(k, cutoff)
		if n := k.limit(); len(ts) >= n {
			ts = ts[:copy(ts, ts[len(ts)-n+1:])]
		}
		t.put(k, append(ts, now), cutoff)
	}
}

// Succeeded clears the (username, ip) counter only: a correct password proves
// nothing about other accounts tried from the same ip, nor about other ips
// trying this account.
func (t *LoginThrottle) Succeeded(username, ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tick()
	delete(t.fails, keysFor(username, ip)[0])
}

// keysFor returns the pair, ip and username counters, pair first. Usernames
// compare case-insensitively so "Root" and "root" share counters.
func keysFor(username, ip string) [3]throttleKey {
	u, ip := clip(strings.ToLower(username)), clip(ip)
	return [3]throttleKey{{'p', u, ip}, {'i', "", ip}, {'u', u, ""}}
}

func clip(s string) string {
	if len(s) > maxKeyPart {
		// strings.Clone so the map does not pin a large request body.
		return strings.Clone(s[:maxKeyPart])
	}
	return s
}

// tick counts a call, sweeps stale entries every pruneEvery calls, and
// returns the current time and the window's start, both in unix nanoseconds.
// Called with t.mu held.
func (t *LoginThrottle) tick() (now, cutoff int64) {
	now = t.now().UnixNano()
	cutoff = now - int64(throttleWindow)
	t.calls++
	if t.calls%pruneEvery == 0 {
		t.prune(cutoff)
	}
	return now, cutoff
}

// trim drops k's failures at or before cutoff, in place, and returns the rest.
func (t *LoginThrottle) trim(k throttleKey, cutoff int64) []int64 {
	ts := t.fails[k]
	i := 0
	for i < len(ts) && ts[i] <= cutoff {
		i++
	}
	if i == len(ts) {
		delete(t.fails, k)
		return nil
	}
	if i > 0 {
		// Store the shorter slice: the shift leaves stale times past its end.
		ts = ts[:copy(ts, ts[i:])]
		t.fails[k] = ts
	}
	return ts
}

// put stores ts under k, making room first if k is new and the map is full.
func (t *LoginThrottle) put(k throttleKey, ts []int64, cutoff int64) {
	if _, ok := t.fails[k]; !ok && len(t.fails) >= t.maxKeys {
		t.prune(cutoff)
		// Still full means every entry is live: a flood of distinct keys.
		// Drop an arbitrary batch (map order is random) so the next inserts do
		// not rescan; bounded memory matters more than exact counts then.
		target := t.maxKeys - t.maxKeys/100 - 1
		for old := range t.fails {
			if len(t.fails) <= target {
				break
			}
			delete(t.fails, old)
		}
	}
	t.fails[k] = ts
}

// prune deletes every entry whose failures have all left the window.
func (t *LoginThrottle) prune(cutoff int64) {
	for k, ts := range t.fails {
		if ts[len(ts)-1] <= cutoff {
			delete(t.fails, k)
		}
	}
}
