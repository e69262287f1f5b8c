package app

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/metrics"
	"github.com/modelgate/modelgate/internal/relay"
)

// Metrics, the /v1 access log and Server-Timing (docs/operations.md,
// Metrics and Logs).

// observe builds the metrics, hands the relay its observer (metrics and
// the access line of each /v1 call) and registers /metrics on mux: served
// to METRICS_TOKEN's bearer, 404 without the variable (the path must not
// fall through to the console's index page).
func (a *App) observe(mux *http.ServeMux) {
	m := metrics.New()
	a.metrics = m
	a.relay.Observer = &callObserver{m: m, log: a.log}
	a.ledger.OnCommit(m.LedgerCommit)
	a.logs.OnCommit(m.LogCommit("logs"))
	a.errLogs.OnCommit(m.LogCommit("error_logs"))
	src := metrics.Sources{
		Log:          a.log,
		Inflight:     func() int64 { n, _ := a.relay.Calls(); return n },
		Channels:     a.Store.ChannelStates,
		Breakers:     func() []breaker.View { _, v := a.relay.Breakers(0); return v },
		LedgerQueue:  a.ledger.QueueDepth,
		LogQueues:    map[string]func() int{"logs": a.logs.QueueDepth, "error_logs": a.errLogs.QueueDepth},
		RateLimits:   a.limits.Status,
		DBRoundTrips: a.Store.RoundTrips,
	}
	if a.cfg.Cluster.Enabled {
		src.Cluster = a.clusterPeers
	}
	m.Watch(src)
	mux.Handle("/metrics", a.metricsHandler())
}

// countPaymentCallback counts a payment notification (api's
// PaymentCallback); observe sets the metrics before anything is served.
func (a *App) countPaymentCallback(method string, accepted bool, reason string) {
	if a.metrics != nil {
		a.metrics.PaymentCallback(method, accepted, reason)
	}
}

// countClusterAuthRefused counts an internal call refused for reason
// (api's ClusterDeps.AuthRefused).
func (a *App) countClusterAuthRefused(reason string) {
	if a.metrics != nil {
		a.metrics.ClusterAuthRefused(reason)
	}
}

// metricsHandler is GET /metrics: 404 unless METRICS_TOKEN is set.
func (a *App) metricsHandler() http.Handler {
	if a.cfg.MetricsToken == "" {
		return http.NotFoundHandler()
	}
	h := a.metrics.Handler(a.cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveMetrics serves /metrics alone on METRICS_LISTEN until ctx ends (a
// port scrapers reach and clients do not).
func (a *App) serveMetrics(ctx context.Context) error {
	if a.cfg.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsListen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.metricsAddr = ln.Addr().String()
	a.log.Info("metrics listening", "addr", a.metricsAddr)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			a.log.Error("metrics listener", "err", err)
		}
	}()
	return nil
}

// MetricsAddr is the address METRICS_LISTEN is served on ("" without it).
func (a *App) MetricsAddr() string { return a.metricsAddr }

// clusterPeers is each peer's replication backlog and ping health.
func (a *App) clusterPeers(ctx context.Context) ([]metrics.Peer, error) {
	nodes, err := a.Store.AllClusterNodes(ctx)
	if err != nil {
		return nil, err
	}
	reps, start, err := a.Replica.ReplicationState(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	var peers []metrics.Peer
	for _, n := range nodes {
		if n.NodeID == a.cfg.Cluster.NodeID || n.Disabled || n.SecretKey == "" {
			// Disabled and awaiting its secret: nothing is pushed to it.
			continue
		}
		age := -1.0
		if n.LastHeartbeat > 0 {
			age = float64(max(now-n.LastHeartbeat, 0))
		}
		rep := reps[n.NodeID]
		lag := 0.0
		if rep.Pending > 0 {
			lag = float64(max(now-rep.OldestPending, 0))
		}
		peers = append(peers, metrics.Peer{NodeID: n.NodeID, Name: n.NodeName, Pending: rep.Pending, Lag: lag,
			HeartbeatAge: age, PingFailures: n.PingFailures, NeedsResync: cluster.NeedsResync(rep.Acked, start)})
	}
	return peers, nil
}

// callObserver feeds the metrics and writes the access line of each /v1
// call: who, what, where, how it ended and how long it took; never a key,
// a prompt or an answer.
type callObserver struct {
	m   *metrics.Metrics
	log *slog.Logger
}

func (o *callObserver) CallDone(r *relay.Report) {
	o.m.CallDone(r)
	ctx := context.Background()
	if !o.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "relay",
		slog.String("request_id", r.RequestID),
		slog.String("endpoint", r.Endpoint),
		slog.Int64("user_id", r.UserID),
		slog.String("username", r.Username),
		slog.String("key_name", r.TokenName),
		slog.String("model", r.Model),
		slog.String("channel", r.Channel),
		slog.Int("status", r.Status),
		slog.String("billing", r.Billing),
		slog.Bool("stream", r.Stream),
		slog.Int64("prompt_tokens", r.PromptTokens),
		slog.Int64("completion_tokens", r.CompletionTokens),
		slog.Int64("quota", r.Quota),
		slog.Float64("upstream_ms", ms(r.Upstream)),
		slog.Float64("gateway_ms", ms(r.Gateway)),
		slog.Float64("total_ms", ms(r.Total)),
	)
}

func (o *callObserver) UpstreamFailed(channel, kind string) { o.m.UpstreamFailed(channel, kind) }

// ms is d in milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
