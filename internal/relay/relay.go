// Package relay serves the /v1 gateway: it authenticates sk- keys, picks an
// upstream channel, forwards the call (JSON or SSE, converting dialects
// where ingress and channel differ), retries on another channel when an
// upstream fails before anything reached the client, and bills the exact
// usage through the billing ledger.
//
// The hot path reads keys, routes and prices from memory (keycache.go,
// catalog.go); its only synchronous database work is the reservation, which
// correctness needs. Settlement and the consume log are group-committed.
package relay

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/modelgate/modelgate/internal/relay/h1"
	"github.com/modelgate/modelgate/internal/relay/tokencount"
	"github.com/modelgate/modelgate/internal/store"
	"go.opentelemetry.io/otel/trace"
)

// Deps is what the relay needs; app wires it.
type Deps struct {
	Store   *store.Store
	Ledger  *billing.Ledger
	Options *option.Registry
	Log     *slog.Logger
	// ErrorLogs takes the error logs of failed calls (errorlog.go); nil
	// records none.
	ErrorLogs ErrorLogWriter
	// Transport carries upstream calls; nil gets the lean HTTP/1.1
	// transport of package h1.
	Transport http.RoundTripper
	// ReloadEvery is how long a cached key is trusted before it is read
	// again, so changes made by other nodes sharing the database are seen
	// (the app calls Reload at the same pace for routes). Default 10 s.
	ReloadEvery time.Duration
	// BodyReadTimeout bounds reading one /v1 request body, so a stalled
	// upload cannot hold its buffer; it does not limit the response.
	// Default DefaultBodyReadTimeout (60 s).
	BodyReadTimeout time.Duration
	// Now is the clock of subscriptions and their limit windows; nil is
	// time.Now (tests move it instead of sleeping).
	Now func() time.Time
	// AfterFunc starts the idle timers of streams and answer bodies
	// (idle.go); nil is time.AfterFunc (tests fire fakes instead of
	// waiting).
	AfterFunc func(d time.Duration, f func()) Timer
	// Limits enforces the keys' and groups' rate limits; nil counts in
	// this process's memory.
	Limits *ratelimit.Limiter
	// Observer learns how calls went (metrics, the access log); nil: none.
	Observer Observer
	// Tracer makes spans of calls and upstream requests (trace.go); nil:
	// none, at no cost.
	Tracer trace.Tracer
}

// Relay is the /v1 handler.
type Relay struct {
	Deps
	keys    *keyCache
	catalog *catalog
	tokens  tokencount.Counter
	bodies  struct {
		pool   sync.Pool // *[]byte request buffers
		boxes  sync.Pool // empty *[]byte, for putBody: a Put costs no allocation
		budget bodyBudget
	}

	inflight atomic.Int64 // calls being served
	started  atomic.Int64 // calls begun since New (the shutdown report)
	// stopping ends every upstream call when EndStreams cancels it.
	stopping   context.Context
	endStreams context.CancelFunc
	memory     memoryReturner

	// responsesLearned: channels found without /v1/responses (responsesapi.go).
	responsesLearned responsesLearned

	cooldownMu sync.Mutex
	cooldown   map[coolKey]time.Time // channel key → skipped until (keypool.go)
	// breakers are the channel circuit breakers of this node (breakers.go).
	breakers breaker.Set

	// The payers: the caller's subscriptions first, then the balance
	// (plans.go, pay).
	plans   *billing.Plans
	balance billing.Balance
}

// now is the relay's clock (Deps.Now).
func (rl *Relay) now() time.Time { return rl.Now() }

// New loads the routing catalog.
func New(ctx context.Context, d Deps) (*Relay, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.ReloadEvery <= 0 {
		d.ReloadEvery = 10 * time.Second
	}
	if d.BodyReadTimeout <= 0 {
		d.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.AfterFunc == nil {
		d.AfterFunc = afterFunc
	}
	if d.Limits == nil {
		d.Limits = ratelimit.New(ratelimit.Config{Log: d.Log})
	}
	if d.Transport == nil {
		// The lean HTTP/1.1 transport holds an open stream with no goroutine
		// of its own; requests through a proxy fall back to net/http's.
		d.Transport = h1.New(newTransport())
	}
	rl := &Relay{
		Deps:     d,
		keys:     newKeyCache(d.Store, d.ReloadEvery, d.Now),
		cooldown: map[coolKey]time.Time{},
		balance:  billing.Balance{Ledger: d.Ledger, Log: d.Log},
		plans:    billing.NewPlans(d.Ledger, d.Store, d.Store.Dialect() == store.SQLite, d.Now),
	}
	cat, err := newCatalog(ctx, d.Store, d.Log, &rl.breakers)
	if err != nil {
		return nil, err
	}
	rl.catalog = cat
	rl.stopping, rl.endStreams = context.WithCancel(context.Background())
	d.Store.OnCommit(rl.keys.changed)
	d.Store.OnCommit(cat.changed)
	go rl.tokens.Preload()
	return rl, nil
}

// Reload re-reads routes and prices; the app calls it every ReloadEvery so
// changes made by other nodes sharing the database are seen.
func (rl *Relay) Reload(ctx context.Context) error { return rl.catalog.reload(ctx) }

// ConfigChanged applies configuration changes another node sharing the
// database committed (package propagation): the keys and users they name
// leave the key cache, and routes and prices are rebuilt when they moved.
func (rl *Relay) ConfigChanged(ctx context.Context, changes []store.Change) error {
	rl.keys.changed(changes)
	for _, ch := range changes {
		if catalogTables[ch.Table] && !ch.Counters {
			return rl.catalog.reload(ctx)
		}
	}
	return nil
}

// ReloadConfig empties the key cache and rebuilds routes and prices: the
// change that happened elsewhere is not known row by row.
func (rl *Relay) ReloadConfig(ctx context.Context) error {
	rl.keys.reset()
	return rl.catalog.reload(ctx)
}

// Calls reports how many calls are being served and how many were begun
// since New (the shutdown report counts drained and cut calls with them).
func (rl *Relay) Calls() (inflight, started int64) {
	return rl.inflight.Load(), rl.started.Load()
}

// Idle waits until no call is being served, so every settlement so far is
// queued in the ledger.
func (rl *Relay) Idle(ctx context.Context) error {
	for rl.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// newTransport is tuned for a gateway: many idle connections per upstream
// host, no transparent gzip (bodies are relayed as they come), bounded dial
// and header waits; no overall timeout, since streams may run for minutes.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   64, // more idle connections only hold memory after a burst
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
		// Requests are written once and are mostly small: a 1 KiB write
		// buffer instead of 4 KiB trims every open upstream connection.
		WriteBufferSize:   1 << 10,
		ForceAttemptHTTP2: true,
	}
}
