package propagation

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelgate/modelgate/internal/store"
)

// Targets are the caches of one node.
type Targets struct {
	// Apply drops or reloads what the changes make stale.
	Apply func(ctx context.Context, changes []store.Change) error
	// ReloadAll reloads every cache (after a hole, a reconnect, a version
	// the poll found moved).
	ReloadAll func(ctx context.Context) error
	// Refresh is the periodic re-read the poll did before versions existed
	// (options, routes and prices); it also catches rows edited in the
	// database by hand, which move no version.
	Refresh func(ctx context.Context) error
}

// Config sets up a Syncer.
type Config struct {
	Store *store.Store
	// Redis, when set, carries the changes (preferred over PostgreSQL's
	// NOTIFY: it is the channel the operator chose for shared state, and it
	// works on MySQL too); KeyPrefix starts its channel name.
	Redis     *redis.Client
	KeyPrefix string
	// PollEvery is the fallback's period (CONFIG_POLL_INTERVAL).
	PollEvery time.Duration
	Targets   Targets
	Log       *slog.Logger
}

// Syncer publishes this node's configuration changes and applies the
// other nodes'.
type Syncer struct {
	cfg    Config
	tr     transport // nil: poll only (MySQL or SQLite without Redis)
	origin string
	track  *tracker
	pub    chan string
	// connected is true while the push channel is subscribed.
	connected atomic.Bool
	// dropped counts messages not published (queue full, publish failed).
	dropped atomic.Int64
}

// gapGrace is how long a hole in the versions heard may stay open before
// a full reload closes it: messages of concurrent commits on different
// nodes may arrive out of order, but never this late.
const gapGrace = time.Second

// New picks the push channel; it reads nothing. state is the config state
// read before the caches were first loaded: its version is applied.
// Register Committed with store.OnConfigCommit, then call Run.
func New(cfg Config, state store.ConfigState) *Syncer {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Syncer{cfg: cfg, origin: rand.Text()[:12], track: newTracker(state.Version), pub: make(chan string, 1024)}
	switch d := cfg.Store.Dialect(); {
	case d == store.SQLite:
		// One node: nobody to tell.
	case cfg.Redis != nil:
		s.tr = &redisTransport{rdb: cfg.Redis, channel: cfg.KeyPrefix + "config:" + state.Instance}
	case d == store.Postgres:
		s.tr = &pgTransport{st: cfg.Store, channel: "modelgate_config_" + state.Instance}
	}
	return s
}

// Version is the config version this node has applied in full (GET
// /api/status config_version): equal on two nodes once they agree.
func (s *Syncer) Version() int64 { return s.track.version() }

// Dropped counts this node's change messages that were not published (a
// full queue or a failed publish): the other nodes caught up by a reload.
func (s *Syncer) Dropped() int64 { return s.dropped.Load() }

// Mechanism names how changes reach this node now: "redis" or "postgres"
// while subscribed, "poll" otherwise.
func (s *Syncer) Mechanism() string {
	if s.tr != nil && s.connected.Load() {
		return s.tr.name()
	}
	return "poll"
}

// Committed takes a configuration change this node committed: its caches
// were told by the store already; the version is applied and the change is
// queued for the other nodes. It never waits: a full queue drops the
// message, and the other nodes close the hole by a reload.
func (s *Syncer) Committed(c store.ConfigCommit) {
	if c.Version > 0 {
		s.track.observe(c.Version, time.Now())
	}
	if s.tr == nil {
		return
	}
	select {
	case s.pub <- encode(s.origin, c):
	default:
		s.dropped.Add(1)
	}
}

// Run picks the push channel and runs the publisher, the subscriber and
// the poll until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	if s.tr != nil {
		go s.publishLoop(ctx)
		go s.subscribeLoop(ctx)
	}
	s.pollLoop(ctx)
}

func (s *Syncer) publishLoop(ctx context.Context) {
	var lastWarn time.Time
	for {
		select {
		case <-ctx.Done():
			s.publishRest()
			return
		case payload := <-s.pub:
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.tr.publish(pctx, payload)
			cancel()
			if err != nil && ctx.Err() == nil {
				s.dropped.Add(1)
				if time.Since(lastWarn) > 10*time.Second {
					lastWarn = time.Now()
					s.cfg.Log.Warn("config propagation: publish failed; other nodes catch up by their poll", "via", s.tr.name(), "err", err)
				}
			}
		}
	}
}

// publishRest sends what is still queued when the node stops, within a
// second: the last changes of a stopping node reach the others at once
// rather than at their next poll.
func (s *Syncer) publishRest() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for {
		select {
		case payload := <-s.pub:
			if s.tr.publish(ctx, payload) != nil {
				return
			}
		default:
			return
		}
	}
}

// subscribeLoop keeps a subscription open, reconnecting with backoff (100 ms
// doubling to 30 s). After every (re)subscription it reads the config
// version: changes made while it was away were not heard, and a version
// ahead of what is applied means reloading everything.
func (s *Syncer) subscribeLoop(ctx context.Context) {
	backoff, failures := 100*time.Millisecond, 0
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sub, err := s.tr.subscribe(sctx)
		cancel()
		if err != nil {
			failures++
			if failures == 1 || failures%20 == 0 {
				s.cfg.Log.Warn("config propagation: cannot subscribe; polling meanwhile", "via", s.tr.name(), "attempts", failures, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 30*time.Second)
			continue
		}
		if failures > 0 {
			s.cfg.Log.Info("config propagation: subscribed again", "via", s.tr.name())
		}
		backoff, failures = 100*time.Millisecond, 0
		s.connected.Store(true)
		s.catchUp(ctx)
		for {
			payload, err := sub.recv(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Log.Warn("config propagation: subscription lost; reconnecting", "via", s.tr.name(), "err", err)
				}
				break
			}
			s.receive(ctx, payload)
		}
		s.connected.Store(false)
		sub.close()
	}
}

// receive applies another node's change.
func (s *Syncer) receive(ctx context.Context, payload string) {
	m, changes, err := decode(payload)
	if err != nil {
		s.cfg.Log.Warn("config propagation: unreadable message ignored", "err", err)
		return
	}
	if m.Origin == s.origin {
		return // told at commit
	}
	if m.All {
		err = s.cfg.Targets.ReloadAll(ctx)
	} else {
		err = s.cfg.Targets.Apply(ctx, changes)
	}
	if err != nil {
		// Not applied: a hole, closed by a full reload after gapGrace.
		s.cfg.Log.Warn("config propagation: applying a change failed", "version", m.Version, "err", err)
		s.track.failed(time.Now())
		return
	}
	if m.Version > 0 {
		s.track.observe(m.Version, time.Now())
	}
}

// catchUp reloads everything when the database's version is ahead of what
// is applied here.
func (s *Syncer) catchUp(ctx context.Context) {
	state, err := s.cfg.Store.ConfigState(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Warn("config propagation: read config version", "err", err)
		}
		return
	}
	if state.Version > s.track.version() {
		s.reloadAll(ctx, state.Version)
	}
}

// reloadAll reloads every cache and marks every change up to v, a version
// read before the reload began, as applied.
func (s *Syncer) reloadAll(ctx context.Context, v int64) {
	if err := s.cfg.Targets.ReloadAll(ctx); err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Warn("config propagation: reload", "err", err)
		}
		return
	}
	s.track.reloaded(v, time.Now())
}

// pollLoop is the fallback: every PollEvery it re-reads the options, routes
// and prices as before and compares the config version, reloading
// everything when it moved past what was heard; every 250 ms it closes
// holes older than gapGrace.
func (s *Syncer) pollLoop(ctx context.Context) {
	poll := time.NewTicker(s.cfg.PollEvery)
	defer poll.Stop()
	gaps := time.NewTicker(250 * time.Millisecond)
	defer gaps.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-gaps.C:
			if !s.track.stuck(time.Now(), gapGrace) {
				continue
			}
			if state, err := s.cfg.Store.ConfigState(ctx); err == nil {
				s.reloadAll(ctx, state.Version)
			}
		case <-poll.C:
			state, err := s.cfg.Store.ConfigState(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Log.Warn("config propagation: read config version", "err", err)
				}
				continue
			}
			if state.Version > s.track.version() {
				s.reloadAll(ctx, state.Version)
				continue
			}
			if err := s.cfg.Targets.Refresh(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Log.Warn("config propagation: periodic reload", "err", err)
			}
		}
	}
}
