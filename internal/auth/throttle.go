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

// Attempt is a login attempt Reserve counted. Refund takes it back.
type Attempt struct {
	username, ip string
	at           int64  // unix nanos: the time stored in memory
	member       string // the member stored in Redis (SharedLoginThrottle)
}

// Reserve counts a login attempt for username from ip before its password is
// checked, and reports whether it may go ahead. Checking and counting happen
// under one lock, so of any number of parallel attempts at most the limit
// are let through to the (slow) password check. A refused attempt is not
// counted. When refused, retryAfter is how long until an attempt may be made.
func (t *LoginThrottle) Reserve(username, ip string) (a Attempt, ok bool, retryAfter time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, cutoff := t.tick()
	if retryAfter = t.wait(username, ip, cutoff); retryAfter > 0 {
		return Attempt{}, false, retryAfter
	}
	t.record(username, ip, now, cutoff)
	return Attempt{username: username, ip: ip, at: now}, true, 0
}

// Refund is called when a reserved attempt logged in: it clears the
// (username, ip) counter (Succeeded) and takes the attempt off the ip and
// username counters, so successful logins never count towards a limit.
func (t *LoginThrottle) Refund(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tick()
	keys := keysFor(a.username, a.ip)
	delete(t.fails, keys[0])
	t.uncount(a, keys[1:])
}

// cancel takes back an attempt that was not made after all (the shared
// throttle refused it), leaving the counters as they were before Reserve.
func (t *LoginThrottle) cancel(a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := keysFor(a.username, a.ip)
	t.uncount(a, keys[:])
}

// uncount removes a's time from the counters keys. Called with t.mu held.
func (t *LoginThrottle) uncount(a Attempt, keys []throttleKey) {
	for _, k := range keys {
		ts := t.fails[k]
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i] == a.at {
				ts = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		if len(ts) == 0 {
			delete(t.fails, k)
		} else {
			t.fails[k] = ts
		}
	}
}

// Allow reports whether a login for username from ip may be attempted now,
// without counting it. When it may not, retryAfter is how long until it may.
func (t *LoginThrottle) Allow(username, ip string) (ok bool, retryAfter time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, cutoff := t.tick()
	retryAfter = t.wait(username, ip, cutoff)
	return retryAfter == 0, retryAfter
}

// wait is how long until every counter of (username, ip) is below its
// limit; 0 when they are now. Called with t.mu held.
func (t *LoginThrottle) wait(username, ip string, cutoff int64) (retryAfter time.Duration) {
	for _, k := range keysFor(username, ip) {
		ts := t.trim(k, cutoff)
		if n := k.limit(); len(ts) >= n {
			// The count drops below the limit when the n-th newest failure
			// leaves the window.
			retryAfter = max(retryAfter, time.Duration(ts[len(ts)-n]-cutoff))
		}
	}
	return retryAfter
}

// Failed records a failed login for username from ip against all three rules.
func (t *LoginThrottle) Failed(username, ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, cutoff := t.tick()
	t.record(username, ip, now, cutoff)
}

// record counts an attempt at now. Called with t.mu held.
func (t *LoginThrottle) record(username, ip string, now, cutoff int64) {
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
