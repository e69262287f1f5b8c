package ratelimit

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotTTL is how long a concurrency slot in Redis lives without being
// refreshed: the slot of a process that died frees itself after at most
// this long. A call refreshes its slots every slotTTL/3 while it runs, so
// long streams keep theirs.
const slotTTL = 60 * time.Second

// windowTTL keeps a window's counters a little past its end, so a late
// settlement still finds them; then Redis drops them.
const windowTTL = 2 * Window

// redisBackend counts in Redis: every node using the same Redis and
// prefix enforces one limit together. An admission is one script call
// (one round trip) that reads and counts the key and the user at once; a
// settlement is one more.
type redisBackend struct {
	rdb    *redis.Client
	prefix string
	node   string // names this process's slots
	seq    atomic.Uint64
}

func newRedisBackend(rdb *redis.Client, prefix string) *redisBackend {
	return &redisBackend{rdb: rdb, prefix: prefix + "rl:", node: rand.Text()[:12]}
}

// admitScript reads the counts of both subjects and, when no limit
// refuses the call (the rule of refusal in rules.go), counts it, in one
// atomic step. KEYS: key requests, key tokens, key slots, user requests,
// user tokens, user slots (a subject without limits has empty limits and
// its keys are untouched). ARGV: now (ms), estimate, slot member, slot
// expiry (ms), window key TTL (ms), then rpm, tpm and concurrency of the
// key and of the user. Returns {admitted (1/0), the six counts before the
// call}.
var admitScript = redis.NewScript(`
local now, est, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local expiry, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local counts, ok = {}, 1
for s = 0, 1 do
  local rpm, tpm, conc = tonumber(ARGV[6+s*3]), tonumber(ARGV[7+s*3]), tonumber(ARGV[8+s*3])
  local r, t, c = 0, 0, 0
  if rpm > 0 or tpm > 0 or conc > 0 then
    r = tonumber(redis.call('GET', KEYS[1+s*3]) or '0')
    t = tonumber(redis.call('GET', KEYS[2+s*3]) or '0')
    redis.call('ZREMRANGEBYSCORE', KEYS[3+s*3], '-inf', now)
    c = redis.call('ZCARD', KEYS[3+s*3])
    if (rpm > 0 and r >= rpm) or (tpm > 0 and t + est > tpm) or (conc > 0 and c >= conc) then ok = 0 end
  end
  counts[#counts+1] = r
  counts[#counts+1] = t
  counts[#counts+1] = c
end
if ok == 1 then
  for s = 0, 1 do
    local rpm, tpm, conc = tonumber(ARGV[6+s*3]), tonumber(ARGV[7+s*3]), tonumber(ARGV[8+s*3])
    if rpm > 0 or tpm > 0 or conc > 0 then
      redis.call('INCR', KEYS[1+s*3])
      redis.call('PEXPIRE', KEYS[1+s*3], ttl)
      if est > 0 then
        redis.call('INCRBY', KEYS[2+s*3], est)
        redis.call('PEXPIRE', KEYS[2+s*3], ttl)
      end
      if conc > 0 then
        redis.call('ZADD', KEYS[3+s*3], expiry, member)
        redis.call('PEXPIRE', KEYS[3+s*3], ttl + expiry - now)
      end
    end
  end
end
table.insert(counts, 1, ok)
return counts
`)

// doneScript settles a call: its estimate is replaced by the real count in
// the token counters that still exist (a window that ended is left
// alone), never below 0, and its slots are freed. KEYS: token counters
// then slot sets, ARGV: delta, member, the number of token counters.
var doneScript = redis.NewScript(`
local delta, member, n = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
for i = 1, #KEYS do
  if i <= n then
    if delta ~= 0 and redis.call('EXISTS', KEYS[i]) == 1 then
      if redis.call('INCRBY', KEYS[i], delta) < 0 then redis.call('SET', KEYS[i], 0, 'KEEPTTL') end
    end
  else
    redis.call('ZREM', KEYS[i], member)
  end
end
return 0
`)

// refreshScript pushes the expiry of a call's slots further.
var refreshScript = redis.NewScript(`
for i = 1, #KEYS do redis.call('ZADD', KEYS[i], 'XX', ARGV[1], ARGV[2]) end
return 0
`)

// names are a subject's three keys in window w.
func (b *redisBackend) names(kind string, id, w int64) (requests, tokens, slots string) {
	base := b.prefix + kind + strconv.FormatInt(id, 10) + ":"
	ws := strconv.FormatInt(w, 10)
	return base + "r:" + ws, base + "t:" + ws, base + "c"
}

func (b *redisBackend) admit(ctx context.Context, req *Request, key, user Limits, t *Ticket) (Result, error) {
	kr, kt, kc := b.names("k", req.KeyID, t.window)
	ur, ut, uc := b.names("u", req.UserID, t.window)
	now := time.Now()
	t.slot = b.node + strconv.FormatUint(b.seq.Add(1), 36)
	res, err := admitScript.Run(ctx, b.rdb, []string{kr, kt, kc, ur, ut, uc},
		now.UnixMilli(), req.Tokens, t.slot, now.Add(slotTTL).UnixMilli(), windowTTL.Milliseconds(),
		key.RPM, key.TPM, key.Concurrency, user.RPM, user.TPM, user.Concurrency).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	if len(res) != 7 {
		return Result{}, errorText("rate limit script: unexpected reply")
	}
	var r Result
	judge(&r, key, user, Counts{res[1], res[2], res[3]}, Counts{res[4], res[5], res[6]}, req.Tokens, !user.IsZero())
	if res[0] == 1 && r.Refused() || res[0] == 0 && !r.Refused() {
		// The script and judge follow one rule; a difference means the
		// counts moved under a script of another version.
		r.Scope, r.Measure = ScopeKey, MeasureRequests
	}
	if res[0] == 1 {
		t.keyID, t.userID = req.KeyID, req.UserID
		t.keyTokens, t.keyConc = !key.IsZero(), key.Concurrency > 0
		t.userTokens, t.userConc = !user.IsZero(), user.Concurrency > 0
		r.Scope, r.Measure = ScopeNone, MeasureNone
	}
	return r, nil
}

// slotKeys are the slot sets t holds a slot in.
func (b *redisBackend) slotKeys(t *Ticket) []string {
	keys := make([]string, 0, 2)
	if t.keyConc {
		_, _, c := b.names("k", t.keyID, t.window)
		keys = append(keys, c)
	}
	if t.userConc {
		_, _, c := b.names("u", t.userID, t.window)
		keys = append(keys, c)
	}
	return keys
}

// keepSlot refreshes t's slots while its call runs.
func (b *redisBackend) keepSlot(t *Ticket) {
	if !t.keyConc && !t.userConc {
		return
	}
	keys, slot := b.slotKeys(t), t.slot
	k := &slotKeeper{}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.timer = time.AfterFunc(slotTTL/3, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		refreshScript.Run(ctx, b.rdb, keys, time.Now().Add(slotTTL).UnixMilli(), slot)
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.stopped {
			k.timer.Reset(slotTTL / 3)
		}
	})
	t.refresh = k
}

// slotKeeper refreshes a call's slots until stopped.
type slotKeeper struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func (k *slotKeeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	k.timer.Stop()
}

func (b *redisBackend) done(ctx context.Context, t *Ticket, used int64) error {
	keys := make([]string, 0, 4)
	if t.keyTokens {
		_, tk, _ := b.names("k", t.keyID, t.window)
		keys = append(keys, tk)
	}
	if t.userTokens {
		_, tk, _ := b.names("u", t.userID, t.window)
		keys = append(keys, tk)
	}
	n := len(keys)
	keys = append(keys, b.slotKeys(t)...)
	return doneScript.Run(ctx, b.rdb, keys, used-t.est, t.slot, n).Err()
}
