// Package app wires modelgate together: it builds the store, the runtime
// settings, the authentication pieces, the log writer and the HTTP handlers,
// and runs the server until it is told to stop. Read New to see the whole
// object graph.
package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/captcha"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/commerce"
	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/logwriter"
	"github.com/modelgate/modelgate/internal/mail"
	"github.com/modelgate/modelgate/internal/metrics"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/payment/alipay"
	"github.com/modelgate/modelgate/internal/payment/wechat"
	"github.com/modelgate/modelgate/internal/propagation"
	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/modelgate/modelgate/internal/relay"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
	"github.com/modelgate/modelgate/web"
)

// Version is the release label reported by /api/status and `modelgate
// version`. A release build sets it with -ldflags "-X
// github.com/modelgate/modelgate/internal/app.Version=…" (Makefile,
// target release); a plain build reports this development label.
var Version = "0.1.0-dev"

// App is a running modelgate instance.
type App struct {
	cfg   config.Config
	log   *slog.Logger
	Store *store.Store
	// Replica is the store's replication; its outbox is on in cluster
	// mode (startReplication).
	Replica *replica.Replica
	Options *option.Registry
	logs    *logwriter.Writer[store.Log]
	// errLogs takes the relay's error logs: a queue of its own, so a flood
	// of failing calls sheds error rows (TryWrite) and never delays the
	// admin and system rows of logs.
	errLogs *logwriter.Writer[store.Log]
	ledger  *billing.Ledger
	// owners finds and asks the owner node of a row (cluster mode; nil off).
	owners *owner.Router
	relay  *relay.Relay
	redis  *redis.Client // nil without REDIS_CONN_STRING
	limits *ratelimit.Limiter
	// limitRedis is the limiter's own Redis client (nil without Redis).
	limitRedis *redis.Client
	handler    http.Handler
	lease      config.BillingLease // with defaults applied; used on shared databases only

	stopBackground context.CancelFunc
	// background counts the loops New started (goBackground); Close
	// waits for them after stopBackground, so no round in progress reads
	// or writes a store being closed.
	background sync.WaitGroup
	// pusher sends this node's events to its peers (nil when cluster
	// mode is off).
	pusher *replicate.Pusher
	// Activate is the one activation path of paid orders (api
	// Server.Activator), for callers outside /api.
	Activate payment.Activator
	// commerce is the order use-cases' service the order sweeper runs.
	commerce *commerce.Service

	// clock is the time of subscriptions and their limit windows in the
	// relay (Now); tests move it (SetClock).
	clock atomic.Pointer[func() time.Time]
	// timers starts the relay's stream idle timers; tests fire fakes
	// (SetAfterFunc).
	timers atomic.Pointer[func(time.Duration, func()) relay.Timer]
	// mailer sends account mails (SetMailSender); nil: the default.
	mailer atomic.Pointer[mail.Sender]

	// metrics is the Prometheus registry (observability.go); metricsAddr
	// the METRICS_LISTEN address served.
	metrics     *metrics.Metrics
	metricsAddr string
	// tracing exports the relay's spans (tracing.go); nil when off.
	tracing *sdktrace.TracerProvider
	// sync carries configuration changes between the nodes sharing the
	// database (propagation.go).
	sync *propagation.Syncer
	// draining is set when a stop begins: /readyz answers 503 from then on.
	draining atomic.Bool
	ready    readiness
	stop     stopReport
}

// Option adjusts what New builds.
type Option func(providers *map[string]payment.Provider)

// WithPaymentProviders sets the wallet channels' protocols by method
// (mobile_a, mobile_b), replacing the built-in ones: tests use fakes.
func WithPaymentProviders(p map[string]payment.Provider) Option {
	return func(dst *map[string]payment.Provider) { *dst = p }
}

// Now is the clock of subscriptions and plan limits: time.Now unless a
// test set another.
func (a *App) Now() time.Time {
	if f := a.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// SetMailSender replaces the SMTP sender of account mails (tests trust
// their fake server's certificate with it).
func (a *App) SetMailSender(s *mail.Sender) { a.mailer.Store(s) }

// mailSender is the sender of account mails: the system's roots unless a
// test set another.
func (a *App) mailSender() *mail.Sender {
	if s := a.mailer.Load(); s != nil {
		return s
	}
	return &mail.Sender{}
}

// SetClock makes now the clock of subscriptions and plan limits (Now), so a
// test can move through the limit windows instead of sleeping.
func (a *App) SetClock(now func() time.Time) { a.clock.Store(&now) }

// SetAfterFunc makes f the starter of the relay's idle timers (of streams
// and of answer bodies), so a test fires an idle timeout instead of
// waiting for it. Calls begun before keep their timers.
func (a *App) SetAfterFunc(f func(time.Duration, func()) relay.Timer) { a.timers.Store(&f) }

// afterFunc starts an idle timer of the relay: time.AfterFunc unless a test set
// another.
func (a *App) afterFunc(d time.Duration, f func()) relay.Timer {
	if p := a.timers.Load(); p != nil {
		return (*p)(d, f)
	}
	return time.AfterFunc(d, f)
}

// New opens the database, applies migrations, creates the root user on first
// start and builds the handlers. Close releases what it opened.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	if cfg.SessionSecretGenerated {
		log.Warn("SESSION_SECRET is not set: a random one is used, so sessions end when the process stops; set it for restarts and for several nodes")
	}
	a := &App{cfg: cfg, log: log, lease: leaseSettings(cfg.BillingLease)}
	// The root user is created under the startup lock, after the
	// migrations: nodes starting together on an empty database create it
	// once (docs/operations.md, Deploy).
	st, err := store.Open(ctx, store.Options{DSN: cfg.SQLDSN, SQLitePath: cfg.SQLitePath, NodeID: cfg.Cluster.NodeID,
		MaxOpenConns: cfg.SQLMaxOpenConns, Logger: log, Seed: a.ensureRoot})
	if err != nil {
		return nil, err
	}
	a.Store, a.Replica = st, replica.New(st)
	// Read before the caches load: every change after it is heard, polled
	// or reloaded (package propagation).
	configState, err := st.ConfigState(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	a.Options, err = option.NewRegistry(ctx, st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	if cfg.Cluster.Enabled {
		// After the seeds above: each node keeps its own root user and
		// defaults; from here on every change replicates.
		a.startReplication()
	}
	a.logs = logwriter.New[store.Log](st, logwriter.Config{Logger: log})
	a.errLogs = logwriter.New[store.Log](st, logwriter.Config{Logger: log, QueueSize: errorLogQueue})
	throttle, err := a.loginThrottle(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}

	if err := a.releaseStaleHolds(ctx, true); err != nil {
		st.Close()
		return nil, err
	}
	if a.usesLease() {
		if err := a.startLease(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	// On SQLite this process is the database's only writer, so holds can
	// live in memory; nodes sharing a server database hold in the database.
	local := st.Dialect() == store.SQLite
	a.owners = a.ownerRouter()
	a.ledger = billing.New(st, billing.Config{Logger: log, Local: local, Slices: !local,
		Grants: a.grantSource(), NodeID: cfg.Cluster.NodeID, LastEventID: a.Replica.LastEventID})
	st.OnCommit(a.ledger.Changed)
	a.limits = a.newLimiter()
	if cfg.Cluster.Enabled {
		if err := a.countClusterNodes(ctx); err != nil {
			a.ledger.Close(ctx)
			st.Close()
			return nil, err
		}
	}
	a.relay, err = relay.New(ctx, relay.Deps{Store: st, Ledger: a.ledger, Options: a.Options, Log: log, ReloadEvery: cfg.ConfigPollInterval,
		BodyReadTimeout: cfg.BodyReadTimeout, ErrorLogs: a.errLogs, Now: a.Now, AfterFunc: a.afterFunc, Limits: a.limits})
	if err != nil {
		a.ledger.Close(ctx)
		st.Close()
		return nil, err
	}
	a.startPropagation(configState)
	// The wallet channels' protocols; tests replace them (WithPaymentProviders).
	providers := defaultProviders()
	for _, o := range opts {
		o(&providers)
	}
	pinger := a.clusterPinger()
	clusterDeps := a.clusterDeps(pinger)
	apiServer := api.New(api.Deps{
		Store:           st,
		Replica:         a.Replica,
		Options:         a.Options,
		Sessions:        auth.NewSessions(cfg.SessionSecret, 0),
		Throttle:        throttle,
		Logs:            a.logs,
		Log:             log,
		RootAccessToken: cfg.RootAccessToken,
		Version:         Version,
		PasswordCost:    cfg.PasswordCost,
		StartTime:       time.Now(),
		Channels:        a.relay,
		Breakers:        a.relay,
		DataDir:         cfg.DataDir,
		Providers:       providers,
		Cluster:         clusterDeps,
		Balances:        owner.NewBalances(st, clusterDeps.Owner),
		Grants:          a.ledger,
		RateLimits:      a.limits,
		PaymentCallback: a.countPaymentCallback,
		ConfigVersion:   a.ConfigVersion,
		Now:             a.Now,
		Mailer:          a.mailSender,
		Turnstile:       &captcha.Turnstile{VerifyURL: cfg.TurnstileVerifyURL},
		GitHub:          api.GitHubURLs{OAuth: cfg.GitHubOAuthBaseURL, API: cfg.GitHubAPIBaseURL},
	})
	a.Activate = apiServer.Activator()
	a.commerce = apiServer.Commerce
	mux := http.NewServeMux()
	// Cross-site browser writes are refused on /api, whose session is a
	// cookie; /v1 is called with keys, often from other origins. Refusals
	// answer the JSON envelope.
	mux.Handle("/api/", withBodyDeadline(cfg.BodyReadTimeout, apiServer.CrossOriginProtection().Handler(apiServer.Handler())))
	relayHandler := a.relay.Handler()
	mux.Handle("/v1/", relayHandler)
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	// Everything else is the web console (index.html for client routes).
	mux.Handle("/", web.Handler())
	a.observe(mux)
	if err := a.startTracing(ctx); err != nil {
		a.ledger.Close(ctx)
		st.Close()
		return nil, err
	}
	a.handler = withRequestLog(log, withNosniff(relayFirst(relayHandler, mux)))

	bg, cancel := context.WithCancel(context.Background())
	a.stopBackground = cancel
	if err := a.serveMetrics(bg); err != nil {
		cancel()
		a.ledger.Close(ctx)
		st.Close()
		return nil, err
	}
	// Nodes sharing one database see each other's configuration changes
	// within a second when a push channel is there, within
	// CONFIG_POLL_INTERVAL otherwise.
	a.background.Go(func() { a.sync.Run(bg) })
	a.repeatInBackground(bg, 10*time.Minute, "release stale reservations", func(ctx context.Context) error {
		return a.releaseStaleHolds(ctx, false)
	})
	if a.usesLease() {
		a.repeatInBackground(bg, a.lease.RenewEvery, "renew billing lease", a.renewLease)
		a.repeatInBackground(bg, a.lease.SweepEvery, "release expired billing leases", a.releaseExpiredLeases)
	}
	// Each channel waits ChannelRecheckMinutes between its own retests;
	// the minute tick only looks for channels that are due.
	a.repeatInBackground(bg, time.Minute, "retest auto-disabled channels", a.RecheckChannels)
	a.repeatInBackground(bg, time.Minute, "sweep rate limit counters", func(context.Context) error {
		a.limits.Sweep(a.Now())
		return nil
	})
	if cfg.Cluster.Enabled {
		a.repeatInBackground(bg, clusterNodesEvery, "count cluster nodes for rate limits", a.countClusterNodes)
	}
	a.repeatInBackground(bg, time.Hour, "prune idempotency keys", func(ctx context.Context) error {
		_, err := a.Store.PruneIdempotencyKeys(ctx)
		return err
	})
	a.repeatInBackground(bg, errorLogSweepEvery, "delete old error logs", func(ctx context.Context) error {
		_, err := a.SweepErrorLogs(ctx, time.Now())
		return err
	})
	a.repeatInBackground(bg, logRetentionEvery, "delete logs past retention", func(ctx context.Context) error {
		_, err := a.SweepLogs(ctx, time.Now())
		return err
	})
	a.repeatInBackground(bg, subscriptionExpiryEvery, "expire subscriptions", func(ctx context.Context) error {
		_, err := a.ExpireSubscriptions(ctx, time.Now())
		return err
	})
	a.repeatInBackground(bg, orderSweepEvery, "expire and reconcile orders", func(ctx context.Context) error {
		_, _, err := a.SweepOrders(ctx)
		return err
	})
	a.repeatInBackground(bg, planUsageSweepEvery, "sweep plan usage", func(ctx context.Context) error {
		_, _, err := a.SweepPlanUsage(ctx, time.Now())
		return err
	})
	if pinger != nil {
		// Close waits for the round in progress (background): its calls
		// end with bg, and an outcome being written is not cut off by the
		// store closing.
		a.repeatInBackground(bg, cfg.Cluster.PingInterval, "ping cluster peers", pinger.Round)
		a.background.Go(func() { a.pusher.Run(bg) })
	}
	a.repeatInBackground(bg, time.Hour, "prune settlement keys", func(ctx context.Context) error {
		_, err := a.Store.PruneSettlementKeys(ctx, time.Now().Add(-store.SettlementKeyRetention).Unix())
		return err
	})
	return a, nil
}

// repeatInBackground runs repeat as one of the background loops Close
// waits for.
func (a *App) repeatInBackground(ctx context.Context, every time.Duration, what string, f func(context.Context) error) {
	a.background.Go(func() { a.repeat(ctx, every, what, f) })
}

// repeat runs f every interval until ctx ends, logging failures.
func (a *App) repeat(ctx context.Context, every time.Duration, what string, f func(context.Context) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn(what, "err", err)
			}
		}
	}
}

// RecheckChannels retests the channels the system disabled that are due
// and re-enables the healthy ones (relay.RecheckChannels); the background
// loop runs it every minute.
func (a *App) RecheckChannels(ctx context.Context) error { return a.relay.RecheckChannels(ctx) }

// loginThrottle counts failed logins in Redis when REDIS_CONN_STRING is set,
// so every node sees them, and in memory otherwise.
func (a *App) loginThrottle(ctx context.Context) (auth.Throttle, error) {
	if a.cfg.RedisConnString == "" {
		return auth.NewLoginThrottle(nil), nil
	}
	opts, err := redis.ParseURL(a.cfg.RedisConnString)
	if err != nil {
		return nil, fmt.Errorf("REDIS_CONN_STRING: %w", err)
	}
	// Fail fast: the throttle falls back to per-node limits when Redis is away.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.MaxRetries = time.Second, time.Second, time.Second, 1
	a.redis = redis.NewClient(opts)
	if err := a.redis.Ping(ctx).Err(); err != nil {
		a.log.Warn("redis does not answer; login throttling stays per node until it does", "err", err)
	}
	return auth.NewSharedLoginThrottle(a.redis, a.cfg.RedisKeyPrefix+"login:", a.log), nil
}

// staleHoldAge is how old a reservation made without a billing lease (by a
// version before leases) must be before a shared database's janitor gives
// it back: longer than any call, so only holds of processes that died
// qualify. A call that outlives it still settles correctly (its cost is
// charged; the hold is not returned twice). Holds under a lease are
// returned when the lease expires (leases.go).
const staleHoldAge = 2 * time.Hour

// releaseStaleHolds gives back money held without a lease for calls whose
// process died. On SQLite this process is the only one, so at start every
// open hold is stale; on a shared database only old ones are.
func (a *App) releaseStaleHolds(ctx context.Context, atStart bool) error {
	cutoff := time.Now().Add(-staleHoldAge).Unix()
	if atStart && a.Store.Dialect() == store.SQLite {
		cutoff = time.Now().Unix() + 1
	}
	n, err := a.Store.ReleaseStaleReservations(ctx, cutoff)
	if n > 0 {
		a.log.Warn("gave back money held for calls that never settled", "reservations", n)
	}
	return err
}

// Handler is the whole HTTP surface.
func (a *App) Handler() http.Handler { return a.handler }

// ensureRoot creates the root user on first start, with INITIAL_ROOT_PASSWORD
// or a random password printed once.
func (a *App) ensureRoot(ctx context.Context, st *store.Store) error {
	exists, err := st.RootExists(ctx)
	if err != nil {
		return err
	}
	if exists {
		if a.cfg.InitialRootPassword != "" {
			// Said at every start, so the quick start's second run cannot
			// leave an operator believing the variable took (issue 30 §5).
			a.log.Warn("INITIAL_ROOT_PASSWORD is ignored: the root user already exists in this database, and the variable only sets the password of the root created on the first start; to change root's password run: modelgate reset-password root")
		}
		return nil
	}
	password, generated := a.cfg.InitialRootPassword, false
	if password == "" {
		password, generated = rand.Text()[:16], true
	}
	hash, err := auth.HashPasswordCost(password, a.cfg.PasswordCost)
	if err != nil {
		return err
	}
	root := store.User{
		Username: user.RootUsername, DisplayName: "Root", PasswordHash: hash,
		Role: user.RoleRoot, Status: user.StatusEnabled, Group: user.DefaultGroup, AffCode: rand.Text()[:8],
	}
	err = st.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateUser(&root); err != nil {
			return err
		}
		return tx.InsertLogs([]store.Log{{UserID: root.ID, Username: root.Username, Type: store.LogSystem,
			Content: store.FirstStartLog}})
	})
	if err != nil {
		// Another node created it first: one older than the startup lock,
		// during a rolling upgrade (the error is the driver's own then).
		if exists, existsErr := st.RootExists(ctx); existsErr == nil && exists {
			return nil
		}
		return fmt.Errorf("create root user: %w", err)
	}
	if generated {
		// Printed once, on purpose: the operator needs it to log in.
		a.log.Warn("created the root user with a random password; change it after logging in",
			"username", user.RootUsername, "password", password)
	} else {
		a.log.Info("created the root user with INITIAL_ROOT_PASSWORD", "username", user.RootUsername)
	}
	return nil
}

// Serve listens on the configured address (LISTEN_ADDR, else ":PORT")
// until ctx ends, then shuts down (ServeListener).
func (a *App) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Addr())
	if err != nil {
		return err
	}
	return a.ServeListener(ctx, ln)
}

// ServeListener serves on ln until ctx ends, then shuts down: it stops
// accepting, gives in-flight calls up to SHUTDOWN_TIMEOUT to finish, then
// ends the streams still running (their upstream calls are cancelled, so
// each settles for what was produced) and closes the remaining
// connections. Close then waits for every settlement before the ledger
// closes (docs/operations.md).
func (a *App) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	port := a.cfg.Port
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		port = tcp.Port
	}
	a.log.Info("modelgate listening", "addr", ln.Addr().String(), "version", Version,
		"login", fmt.Sprintf("curl -X POST http://localhost:%d/api/user/login -d '{\"username\":\"root\",\"password\":\"<password>\"}'", port))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.beginStop()
	a.log.Info("shutting down: readiness is off", "delay", a.cfg.ShutdownDelay, "timeout", a.cfg.ShutdownTimeout)
	if d := a.cfg.ShutdownDelay; d > 0 {
		// Still serving, so a balancer that has not yet seen /readyz turn
		// 503 loses nothing; answers close their connections, so clients
		// reconnect elsewhere.
		srv.SetKeepAlivesEnabled(false)
		select {
		case <-time.After(d):
		case err := <-errc:
			return err
		}
		a.stop.mu.Lock()
		a.stop.Delay = d
		a.stop.mu.Unlock()
	}
	drainStart := time.Now()
	defer func() {
		a.stop.mu.Lock()
		a.stop.Drain = time.Since(drainStart)
		a.stop.mu.Unlock()
	}()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err == nil {
		return nil
	}
	a.log.Warn("calls still running at the shutdown timeout: ending their upstream calls; each is billed for what was produced")
	a.cutting()
	a.relay.EndStreams()
	// Ended streams tell their clients and settle at once; a client that
	// does not read its connection must not hold the stop up.
	endCtx, cancelEnd := context.WithTimeout(context.Background(), endGrace)
	defer cancelEnd()
	if err := a.relay.Idle(endCtx); err != nil {
		a.log.Warn("closing the connections of calls that did not end", "err", err)
	}
	return srv.Close()
}

// endGrace is how long ended calls get to tell their clients before the
// connections are closed, and Close's bound for the last settlements.
const endGrace = 5 * time.Second

// FlushBilling waits until every settlement and batched log row queued so
// far is committed (tests, and the moment before a planned stop).
func (a *App) FlushBilling(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := a.relay.Idle(ctx); err != nil {
		return err
	}
	return errors.Join(a.ledger.Flush(ctx), a.logs.Flush(ctx), a.errLogs.Flush(ctx))
}

// Close ends the calls still running (Serve already gave them
// SHUTDOWN_TIMEOUT), waits until every call has queued its settlement,
// then commits every settlement and log row and closes the database: no
// call's charge is lost and no hold stays locked.
func (a *App) Close() error {
	a.beginStop()
	a.stopBackground()
	a.background.Wait()
	a.cutting()
	a.relay.EndStreams()
	flushStart := time.Now()
	idleCtx, cancelIdle := context.WithTimeout(context.Background(), endGrace)
	defer cancelIdle()
	idleErr := a.relay.Idle(idleCtx)
	if idleErr != nil {
		idleErr = fmt.Errorf("calls still running at close, their settlements may be lost: %w", idleErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	flushErr := errors.Join(a.ledger.Close(ctx), a.logs.Close(ctx), a.errLogs.Close(ctx), a.stopTracing(ctx))
	if a.usesLease() {
		// After the ledger: every settlement it had is committed, so what
		// the lease still covers belongs to calls that never settled.
		flushErr = errors.Join(flushErr, a.endLease(ctx))
	}
	a.endStop(flushStart)
	var redisErr error
	if a.redis != nil {
		redisErr = a.redis.Close()
	}
	if a.limitRedis != nil {
		redisErr = errors.Join(redisErr, a.limitRedis.Close())
	}
	return errors.Join(idleErr, flushErr, redisErr, a.Store.Close())
}

// paymentTimeout bounds one call to a payment provider (a pre-payment): the
// client that ordered waits for it.
const paymentTimeout = 15 * time.Second

// defaultProviders are the real wallet channels: WeChat Pay API v2
// (mobile_a) and Alipay (mobile_b), over one client with a timeout.
func defaultProviders() map[string]payment.Provider {
	client := &http.Client{Timeout: paymentTimeout}
	return map[string]payment.Provider{
		payment.MethodWechat: wechat.New(client),
		payment.MethodAlipay: alipay.New(client),
	}
}
