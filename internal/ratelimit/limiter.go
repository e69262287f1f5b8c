package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Request is one call as the limiter sees it.
type Request struct {
	KeyID, UserID int64
	// Key is the key's limits, User its owner's group limits (counted per
	// user); both apply.
	Key, User Limits
	// Tokens is the call's token estimate, held against the TPM limits
	// until Done replaces it with the real count.
	Tokens int64
	// Now places the call in its window.
	Now time.Time
	// FailClosed refuses the call when the shared counters cannot be
	// reached; otherwise this node's own counters enforce the limits.
	FailClosed bool
}

// Ticket is an admitted call's hold on its limits; Done gives it back.
// The zero Ticket holds nothing.
type Ticket struct {
	backend    uint8 // 0: nothing held
	window     int64
	est        int64
	key, user  *counter // this node's counts (every backend)
	keyID      int64    // redis
	userID     int64
	keyConc    bool // redis: a slot is held under the key, the user
	userConc   bool
	keyTokens  bool // redis: tokens are counted under the key, the user
	userTokens bool
	slot       string
	refresh    *slotKeeper
}

const (
	backendMemory uint8 = iota + 1
	backendRedis
)

// Config configures a Limiter.
type Config struct {
	// Redis, when set, holds the counters so that every node using it
	// enforces one limit together.
	Redis *redis.Client
	// Prefix starts every Redis key; a cluster node adds its own part
	// (its counters are its share of the limit, docs/decisions/rate-limits.md).
	Prefix string
	Log    *slog.Logger
	// Clock is this node's clock for the deadlines of admissions sent to
	// Redis (not for windows: those follow Request.Now). Nil: the
	// monotonic clock, which a step of the wall clock does not move.
	Clock func() time.Time
}

// Limiter enforces the limits of calls. Its zero cost promise: a call
// whose key and group set no limit never reaches it (the relay checks
// Limits.IsZero first).
type Limiter struct {
	mem   *memory
	redis *redisBackend // nil: this node's memory only
	log   *slog.Logger
	// nodes is how many nodes enforce the limits independently (a
	// multi-active cluster): each takes its Share.
	nodes atomic.Int64

	// down is set while Redis fails: the failure is logged when it starts
	// and when it ends, not per call.
	down atomic.Bool
	// retryAt (unix ns): while down, calls before it do not try Redis at
	// all, so an outage costs one probe a second, not a timeout per call.
	retryAt atomic.Int64
	// Counters for admins and metrics.
	redisErrors    atomic.Int64
	redisIncidents atomic.Int64
	refused        atomic.Int64
	failedClosed   atomic.Int64
}

// New builds a limiter.
func New(cfg Config) *Limiter {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	l := &Limiter{mem: newMemory(), log: cfg.Log}
	l.nodes.Store(1)
	if cfg.Clock == nil {
		cfg.Clock = monotonicClock()
	}
	if cfg.Redis != nil {
		l.redis = newRedisBackend(cfg.Redis, cfg.Prefix, cfg.Clock)
	}
	return l
}

// SetNodes sets how many nodes share the limits out (1 outside a
// multi-active cluster).
func (l *Limiter) SetNodes(n int) { l.nodes.Store(int64(max(n, 1))) }

// Admit checks req against its limits and, when it is admitted, counts it:
// the returned Ticket must go to Done when the call ends. A refused call
// holds nothing.
//
// Every call this node admits is counted in its memory, also when Redis
// counts it for the fleet, and needs both to admit it: so when Redis
// fails and the node falls back to its memory, the calls it already
// served in the window count, and a fleet of N nodes serves at most N × L
// in any window, including one that straddles an outage
// (docs/decisions/rate-limits.md).
func (l *Limiter) Admit(ctx context.Context, req *Request) (Ticket, Result) {
	key, user := req.Key, req.User
	if n := int(l.nodes.Load()); n > 1 {
		key, user = shareOf(key, n), shareOf(user, n)
	}
	t := Ticket{window: WindowOf(req.Now), est: req.Tokens}
	r := l.mem.admit(req, key, user, t.window, &t)
	if r.Refused() || l.redis == nil {
		if !r.Refused() {
			t.backend = backendMemory
		}
		return t, l.finish(r, req)
	}
	if l.tryRedis() {
		rr, err := l.redis.admit(ctx, req, key, user, &t)
		if err == nil {
			l.up()
			if rr.Refused() {
				l.mem.undo(&t)
				return Ticket{}, l.finish(rr, req)
			}
			t.backend = backendRedis
			l.redis.keepSlot(&t)
			return t, l.finish(rr, req)
		}
		l.failed(err)
	}
	if req.FailClosed {
		l.mem.undo(&t)
		l.failedClosed.Add(1)
		return Ticket{}, Result{Unavailable: true}
	}
	t.backend = backendMemory
	return t, l.finish(r, req)
}

func (l *Limiter) finish(r Result, req *Request) Result {
	r.Reset = ResetIn(req.Now)
	if r.Refused() {
		l.refused.Add(1)
	}
	return r
}

// Done ends the call of t, which used tokens (prompt + completion; 0 when
// it failed before any): its concurrency slot is freed and its token
// estimate replaced by the real count, in the window it was admitted in.
func (l *Limiter) Done(t *Ticket, tokens int64) {
	if t.backend == 0 {
		return
	}
	l.mem.done(t, tokens)
	if t.backend == backendRedis {
		if t.refresh != nil {
			t.refresh.stop()
		}
		// Settlement must not depend on the caller's context: the client
		// may be gone.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := l.redis.done(ctx, t, tokens)
		cancel()
		if err != nil {
			l.failed(err) // its slot is freed when Redis answers again, or by its lease
		} else {
			l.up()
		}
	}
	t.backend = 0
}

// tryRedis reports whether this call should use Redis: always while it
// answers; during an outage one call a second probes it.
func (l *Limiter) tryRedis() bool {
	if !l.down.Load() {
		return true
	}
	now := time.Now().UnixNano()
	at := l.retryAt.Load()
	return now >= at && l.retryAt.CompareAndSwap(at, now+int64(time.Second))
}

// failed records a Redis failure; the first of an incident is logged.
func (l *Limiter) failed(err error) {
	l.redisErrors.Add(1)
	l.retryAt.Store(time.Now().Add(time.Second).UnixNano())
	if l.down.CompareAndSwap(false, true) {
		l.redisIncidents.Add(1)
		l.log.Warn("rate limits: redis unavailable; calls follow RateLimitFailClosed until it answers", "err", err)
	}
}

// up ends an incident.
func (l *Limiter) up() {
	if l.down.Load() && l.down.CompareAndSwap(true, false) {
		l.log.Info("rate limits: redis answers again")
	}
}

// Sweep forgets this node's counters idle since before now's window.
func (l *Limiter) Sweep(now time.Time) int { return l.mem.sweep(WindowOf(now)) }

// Status is what admins see of the limiter (GET /api/ratelimit/status).
type Status struct {
	// Backend is "memory" or "redis".
	Backend string `json:"backend"`
	// Nodes is how many nodes share each limit out (cluster); 1 otherwise.
	Nodes int64 `json:"nodes"`
	// RedisDown: the last call to Redis failed.
	RedisDown bool `json:"redis_down"`
	// RedisErrors counts failed calls to Redis (during an outage one call
	// a second tries it), RedisIncidents the outages (a run of failures).
	RedisErrors    int64 `json:"redis_errors"`
	RedisIncidents int64 `json:"redis_incidents"`
	// Refused counts calls refused by a limit, FailedClosed calls refused
	// because Redis did not answer.
	Refused      int64 `json:"refused"`
	FailedClosed int64 `json:"failed_closed"`
	// FailClosed is the option RateLimitFailClosed in force (the API
	// fills it in).
	FailClosed bool `json:"fail_closed"`
}

// Status reports the limiter's counters.
func (l *Limiter) Status() Status {
	s := Status{Backend: "memory", Nodes: l.nodes.Load(), RedisDown: l.down.Load(),
		RedisErrors: l.redisErrors.Load(), RedisIncidents: l.redisIncidents.Load(),
		Refused: l.refused.Load(), FailedClosed: l.failedClosed.Load()}
	if l.redis != nil {
		s.Backend = "redis"
	}
	return s
}

// Inflight is the calls in flight this node's memory counts for a key
// (user false) or a user; tests read it.
func (l *Limiter) Inflight(user bool, id int64) int64 { return l.mem.inflight(user, id) }
