package auth

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Throttle is what login handlers need from a throttle: LoginThrottle in
// memory, or SharedLoginThrottle across nodes through Redis.
type Throttle interface {
	// Reserve counts an attempt before its password is checked and reports
	// whether it may go ahead (see LoginThrottle.Reserve).
	Reserve(username, ip string) (a Attempt, ok bool, retryAfter time.Duration)
	// Refund takes back the attempt of a login that succeeded.
	Refund(a Attempt)
}

// SharedLoginThrottle applies the same rules as LoginThrottle to the
// failures of every node that shares one Redis, so adding nodes does not
// multiply an attacker's attempts. It keeps the in-memory throttle too: when
// Redis does not answer, logins are still limited per node (and the error is
// logged) rather than refused or left unlimited.
type SharedLoginThrottle struct {
	local  *LoginThrottle
	rdb    *redis.Client
	prefix string
	log    *slog.Logger
}

// NewSharedLoginThrottle uses rdb with keys under prefix (for example
// "modelgate:login:").
func NewSharedLoginThrottle(rdb *redis.Client, prefix string, log *slog.Logger) *SharedLoginThrottle {
	return &SharedLoginThrottle{local: NewLoginThrottle(nil), rdb: rdb, prefix: prefix, log: log}
}

// redisKeys are the three counters of a login (keysFor), each kept in Redis
// as a sorted set of failure times (unix ms).
func (t *SharedLoginThrottle) redisKeys(username, ip string) [3]throttleKey {
	return keysFor(username, ip)
}

func (t *SharedLoginThrottle) name(k throttleKey) string {
	// Length-prefixed parts: no username or ip can collide with another key.
	return t.prefix + string(k.kind) + ":" + strconv.Itoa(len(k.username)) + ":" + k.username + ":" + k.ip
}

// reserveScript checks the three counters and, when all are below their
// limits, adds the attempt to each, in one atomic step: parallel logins on
// any number of nodes cannot all pass the check before one is counted.
// KEYS: pair, ip, username. ARGV: now (ms), window (ms), member, the three
// limits. Returns 0 when counted, else the milliseconds to wait.
var reserveScript = redis.NewScript(`
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local wait = 0
for i = 1, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  local n = redis.call('ZCARD', KEYS[i])
  local limit = tonumber(ARGV[3 + i])
  if n >= limit then
    local s = redis.call('ZRANGE', KEYS[i], n - limit, n - limit, 'WITHSCORES')
    wait = math.max(wait, tonumber(s[2]) + window - now, 1)
  end
end
if wait > 0 then return wait end
for i = 1, 3 do
  redis.call('ZADD', KEYS[i], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[i], window)
end
return 0
`)

// Reserve counts the attempt on this node, then in Redis. When Redis does
// not answer, the node's own count decides.
func (t *SharedLoginThrottle) Reserve(username, ip string) (Attempt, bool, time.Duration) {
	a, ok, wait := t.local.Reserve(username, ip)
	if !ok {
		return a, false, wait
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	keys := t.redisKeys(username, ip)
	names := make([]string, len(keys))
	args := []any{time.Now().UnixMilli(), throttleWindow.Milliseconds(), rand.Text()}
	for i, k := range keys {
		names[i] = t.name(k)
		args = append(args, k.limit())
	}
	ms, err := reserveScript.Run(ctx, t.rdb, names, args...).Int64()
	if err != nil {
		t.log.Warn("login throttle: redis unavailable, limiting per node only", "err", err)
		return a, true, 0
	}
	if ms > 0 {
		t.local.cancel(a)
		return Attempt{}, false, time.Duration(ms) * time.Millisecond
	}
	a.member = args[2].(string)
	return a, true, 0
}

// Refund takes the attempt back locally and in Redis.
func (t *SharedLoginThrottle) Refund(a Attempt) {
	t.local.Refund(a)
	if a.member == "" {
		return // never reached Redis
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	keys := t.redisKeys(a.username, a.ip)
	pipe := t.rdb.Pipeline()
	pipe.Del(ctx, t.name(keys[0]))
	for _, k := range keys[1:] {
		pipe.ZRem(ctx, t.name(k), a.member)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.log.Warn("login throttle: refund in redis", "err", err)
	}
}

// Allow checks the local and the shared counters.
func (t *SharedLoginThrottle) Allow(username, ip string) (bool, time.Duration) {
	if ok, wait := t.local.Allow(username, ip); !ok {
		return false, wait
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := time.Now().UnixMilli()
	windowStart := now - throttleWindow.Milliseconds()
	keys := t.redisKeys(username, ip)
	pipe := t.rdb.Pipeline()
	oldest := make([]*redis.ZSliceCmd, len(keys))
	counts := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		pipe.ZRemRangeByScore(ctx, t.name(k), "-inf", strconv.FormatInt(windowStart, 10))
		counts[i] = pipe.ZCard(ctx, t.name(k))
		oldest[i] = pipe.ZRangeWithScores(ctx, t.name(k), 0, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.log.Warn("login throttle: redis unavailable, limiting per node only", "err", err)
		return true, 0
	}
	var wait time.Duration
	for i, k := range keys {
		if counts[i].Val() < int64(k.limit()) || len(oldest[i].Val()) == 0 {
			continue
		}
		// Conservative: the window frees up when the oldest failure ages out.
		until := time.Duration(int64(oldest[i].Val()[0].Score)+throttleWindow.Milliseconds()-now) * time.Millisecond
		wait = max(wait, until)
	}
	return wait <= 0, wait
}

// Failed records a failure locally and in Redis.
func (t *SharedLoginThrottle) Failed(username, ip string) {
	t.local.Failed(username, ip)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := time.Now().UnixMilli()
	pipe := t.rdb.Pipeline()
	for _, k := range t.redisKeys(username, ip) {
		// A random member: two failures in the same millisecond both count.
		pipe.ZAdd(ctx, t.name(k), redis.Z{Score: float64(now), Member: rand.Text()})
		pipe.PExpire(ctx, t.name(k), throttleWindow)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.log.Warn("login throttle: record failure in redis", "err", err)
	}
}

// Succeeded clears the (username, ip) counter locally and in Redis.
func (t *SharedLoginThrottle) Succeeded(username, ip string) {
	t.local.Succeeded(username, ip)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := t.rdb.Del(ctx, t.name(t.redisKeys(username, ip)[0])).Err(); err != nil {
		t.log.Warn("login throttle: clear in redis", "err", err)
	}
}
