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

// slotTTL is the lease of a concurrency slot in Redis, counted on Redis's
// own clock: the slot of a process that died, or of a call whose
// settlement was lost, frees itself after at most this long. A call renews
// its slots every slotTTL/3 while it runs, so long streams keep theirs.
const slotTTL = 60 * time.Second

// windowTTL keeps a window's counters a little past its end, so a late
// settlement still finds them; then Redis drops them.
const windowTTL = 2 * Window

// admitWait is how long the limiter's client waits for a connection, to
// write, and for an answer (ClientOptions); then the call follows the fail
// mode.
const admitWait = 500 * time.Millisecond

// runWithin is how long after it was written an admission script may still
// run, for a client that waits readTimeout for answers: later, it counts
// nothing, because the gateway may have stopped waiting (a Redis that was
// frozen runs the scripts it had received when it resumes). The difference
// leaves room for the answer's way back and for the error of the clock
// estimate. A client without a read timeout waits for every answer.
func runWithin(readTimeout time.Duration) time.Duration {
	if readTimeout <= 0 {
		return time.Hour
	}
	return readTimeout - min(readTimeout/5, 100*time.Millisecond)
}

// redisBackend counts in Redis: every node using the same Redis and
// prefix enforces one limit together. An admission is one script call
// (one round trip) that reads and counts the key and the user at once; a
// settlement is one more.
type redisBackend struct {
	rdb    *redis.Client
	prefix string
	node   string // names this process's slots
	seq    atomic.Uint64
	clock  redisClock
	within time.Duration // runWithin of rdb
	owed   owedSlots
}

func newRedisBackend(rdb *redis.Client, prefix string, now func() time.Time) *redisBackend {
	return &redisBackend{rdb: rdb, prefix: prefix + "rl:", node: rand.Text()[:12], clock: redisClock{now: now},
		within: runWithin(rdb.Options().ReadTimeout)}
}

// ClientOptions are the options of the limiter's own Redis client, made
// from the gateway's: it fails fast (a call waits on Redis about half a
// second at most, then the fail mode decides) and never retries: a
// retried admission script could count its call twice.
func ClientOptions(base *redis.Options) *redis.Options {
	opts := *base
	opts.MaxRetries = -1
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = admitWait, admitWait, admitWait, admitWait
	return &opts
}

// scriptNow is the prologue of the scripts that read Redis's clock: now
// is Redis's time in ms. (Redis 3.2 to 4 need effects replication to
// write after reading TIME; later versions always do it.)
const scriptNow = `
if redis.replicate_commands then redis.replicate_commands() end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
`

// admitScript reads the counts of both subjects and, when no limit
// refuses the call (the rule of refusal in rules.go), counts it, in one
// atomic step. KEYS: key requests, key tokens, key slots, user requests,
// user tokens, user slots (a subject without limits has empty limits and
// its keys are untouched). ARGV: deadline (Redis ms), estimate, slot
// member, slot lease (ms), window key TTL (ms), then rpm, tpm and
// concurrency of the key and of the user.
//
// A script that runs after its deadline counts nothing and answers -1:
// nobody may be waiting for its answer. Slots are scored by the end of
// their lease on Redis's clock, so the clocks of the nodes do not matter;
// those past it are dropped before counting.
//
// Returns {admitted (1, 0, or -1: late), the six counts before the call,
// Redis's time in ms}.
var admitScript = redis.NewScript(scriptNow + `
local deadline, est, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local lease, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
if now > deadline then return {-1, 0, 0, 0, 0, 0, 0, now} end
local counts, ok = {1}, 1
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
        redis.call('ZADD', KEYS[3+s*3], now + lease, member)
        if redis.call('PTTL', KEYS[3+s*3]) < lease then redis.call('PEXPIRE', KEYS[3+s*3], lease) end
      end
    end
  end
end
counts[1] = ok
counts[#counts+1] = now
return counts
`)

// doneScript settles a call: its estimate is replaced by the real count in
// the token counters that still exist (a window that ended is left
// alone), never below 0, and its slots are freed: exactly its own member,
// so a settlement that arrives late frees nobody else's. KEYS: token
// counters then slot sets, ARGV: delta, member, the number of token
// counters.
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

// renewScript extends the lease of a running call's slots (and of their
// sets) from Redis's now. A slot that is gone (freed, or dropped after
// its lease ran out while Redis could not be reached) is not taken again:
// its place may be another call's now. ARGV: lease (ms), member.
var renewScript = redis.NewScript(scriptNow + `
local lease, member = tonumber(ARGV[1]), ARGV[2]
for i = 1, #KEYS do
  if redis.call('ZSCORE', KEYS[i], member) then
    redis.call('ZADD', KEYS[i], now + lease, member)
    if redis.call('PTTL', KEYS[i]) < lease then redis.call('PEXPIRE', KEYS[i], lease) end
  end
end
return 0
`)

// names are a subject's three keys in window w.
func (b *redisBackend) names(kind string, id, w int64) (requests, tokens, slots string) {
	base := b.prefix + kind + strconv.FormatInt(id, 10) + ":"
	ws := strconv.FormatInt(w, 10)
	return base + "r:" + ws, base + "t:" + ws, base + "c"
}

// errLate: Redis ran the admission after its deadline twice, though it
// answered in time; the call follows the fail mode.
const errLate = errorText("rate limit script: redis ran the admission after its deadline")

func (b *redisBackend) admit(ctx context.Context, req *Request, key, user Limits, t *Ticket) (Result, error) {
	kr, kt, kc := b.names("k", req.KeyID, t.window)
	ur, ut, uc := b.names("u", req.UserID, t.window)
	t.slot = b.node + strconv.FormatUint(b.seq.Add(1), 36)
	var res []int64
	for try := 0; ; try++ {
		deadline := &deadlineArg{clock: &b.clock, within: b.within}
		var err error
		res, err = admitScript.Run(ctx, b.rdb, []string{kr, kt, kc, ur, ut, uc},
			deadline, req.Tokens, t.slot, slotTTL.Milliseconds(), windowTTL.Milliseconds(),
			key.RPM, key.TPM, key.Concurrency, user.RPM, user.TPM, user.Concurrency).Int64Slice()
		if err == nil && len(res) != 8 {
			err = errorText("rate limit script: unexpected reply")
		}
		if err != nil {
			// The script may have run, or may run when Redis resumes,
			// though nobody got its answer: whatever slot it took is
			// given back as soon as Redis answers again.
			b.owe(slotSets(key, user, kc, uc), t.slot)
			return Result{}, err
		}
		late := res[0] == -1
		b.clock.observe(deadline.sent, b.clock.local(), res[7], late)
		if !late {
			break
		}
		// The answer came in time, so the estimate of Redis's clock was
		// off (a first call, a clock that stepped): once more with the
		// estimate this answer gave.
		if try == 1 {
			return Result{}, errLate
		}
	}
	b.pay()
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

// slotSets are the slot sets an admission of these limits takes a slot in.
func slotSets(key, user Limits, keySlots, userSlots string) []string {
	var sets []string
	if key.Concurrency > 0 {
		sets = append(sets, keySlots)
	}
	if user.Concurrency > 0 {
		sets = append(sets, userSlots)
	}
	return sets
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

// keepSlot renews t's slots while its call runs.
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
		renewScript.Run(ctx, b.rdb, keys, slotTTL.Milliseconds(), slot)
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.stopped {
			k.timer.Reset(slotTTL / 3)
		}
	})
	t.refresh = k
}

// slotKeeper renews a call's slots until stopped.
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
	slots := b.slotKeys(t)
	keys = append(keys, slots...)
	err := doneScript.Run(ctx, b.rdb, keys, used-t.est, t.slot, n).Err()
	if err != nil {
		// Freeing a slot twice is harmless; settling tokens twice is
		// not, so only the slot is retried.
		b.owe(slots, t.slot)
		return err
	}
	b.pay()
	return nil
}
