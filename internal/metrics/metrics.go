// Package metrics is modelgate's Prometheus surface (docs/operations.md,
// Metrics): counters and histograms the relay feeds once per call, and
// collectors that read the state other packages already keep (breakers,
// queues, the limiter, the cluster tables) only when /metrics is scraped,
// so serving calls does no extra work for them.
package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/modelgate/modelgate/internal/relay"
)

// namespace starts every series modelgate exports.
const namespace = "modelgate"

// Buckets, in seconds. Upstream and whole-call times span a fast embedding
// to a long stream; the gateway's own time is sub-millisecond when healthy.
var (
	upstreamBuckets = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	gatewayBuckets  = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}
	commitBuckets   = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// Metrics is the registry and the series fed on events.
type Metrics struct {
	Registry *prometheus.Registry

	requests                 *prometheus.CounterVec
	upstream, gateway, total *prometheus.HistogramVec
	tokens, quota            *prometheus.CounterVec
	upstreamErrors           *prometheus.CounterVec
	ledgerCommit             prometheus.Histogram
	logCommit                *prometheus.HistogramVec
	callbacks                *prometheus.CounterVec
	clusterRefused           *prometheus.CounterVec

	// series caches the children of one label set, so a call costs one
	// map read under a shared lock instead of a label hash per series.
	mu     sync.RWMutex
	series map[seriesKey]*callSeries
	// failures caches upstream error children by channel and kind.
	failures map[[2]string]prometheus.Counter
}

type seriesKey struct {
	endpoint, model, channel, billing string
	status                            int
}

type callSeries struct {
	requests                 prometheus.Counter
	upstream, gateway, total prometheus.Observer
	prompt, completion       prometheus.Counter
	quota                    prometheus.Counter
}

// New builds the registry with the Go and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{reg}
	m := &Metrics{
		Registry: reg,
		requests: f.counterVec("relay_requests_total",
			"Relayed /v1 calls by endpoint, priced model, channel, HTTP status and billing source.",
			"endpoint", "model", "channel", "status", "billing"),
		upstream: f.histogramVec("relay_upstream_seconds",
			"Time waiting for upstreams until the answer's header was written (streams: to the upstream's response header).",
			upstreamBuckets, "model"),
		gateway: f.histogramVec("relay_gateway_seconds",
			"The gateway's own time until the answer's header was written (its overhead; Server-Timing gw).",
			gatewayBuckets, "model"),
		total: f.histogramVec("relay_request_seconds",
			"Whole /v1 calls, until the last byte (streams included).", upstreamBuckets, "model"),
		tokens: f.counterVec("relay_tokens_total", "Tokens of relayed calls by model and kind (prompt, completion).",
			"model", "kind"),
		quota: f.counterVec("relay_quota_total",
			"Quota units charged (balance) or worth at balance prices (plan) by model.", "model"),
		upstreamErrors: f.counterVec("upstream_errors_total",
			"Failed upstream attempts by channel and kind (unreachable, rate_limited, server_error, key_refused, bad_response, stream_broken, shutdown).",
			"channel", "kind"),
		ledgerCommit: f.histogram("ledger_commit_seconds",
			"Duration of the billing ledger's group commits (one transaction).", commitBuckets),
		logCommit: f.histogramVec("logwriter_commit_seconds",
			"Duration of the log writers' batch inserts.", commitBuckets, "writer"),
		callbacks: f.counterVec("payment_callbacks_total",
			"Payment provider callbacks by provider, outcome (accepted, rejected) and reason.",
			"provider", "outcome", "reason"),
		clusterRefused: f.counterVec("cluster_auth_refused_total",
			"Internal cluster calls refused by reason (secret, no_node, bad_timestamp, stale_timestamp, unknown_node, disabled_node, no_secret, no_signature, bad_signature, source_mismatch, join_token).",
			"reason"),
		series:   map[seriesKey]*callSeries{},
		failures: map[[2]string]prometheus.Counter{},
	}
	return m
}

// Handler serves the registry to whoever presents "Bearer token", and
// answers 401 to everyone else. The comparison is of SHA-256 digests in
// constant time, so neither the token nor its length leaks through timing.
func (m *Metrics) Handler(token string) http.Handler {
	want := sha256.Sum256([]byte("Bearer " + token))
	h := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// CallDone counts one relayed call (relay.Observer).
func (m *Metrics) CallDone(r *relay.Report) {
	k := seriesKey{endpoint: r.Endpoint, model: orNone(r.Model), channel: orNone(r.Channel), billing: orNone(r.Billing), status: r.Status}
	m.mu.RLock()
	s := m.series[k]
	m.mu.RUnlock()
	if s == nil {
		s = m.newSeries(k)
	}
	s.requests.Inc()
	if r.Status != 0 { // 0: the client left before any answer
		s.upstream.Observe(r.Upstream.Seconds())
		s.gateway.Observe(r.Gateway.Seconds())
	}
	s.total.Observe(r.Total.Seconds())
	if r.PromptTokens > 0 {
		s.prompt.Add(float64(r.PromptTokens))
	}
	if r.CompletionTokens > 0 {
		s.completion.Add(float64(r.CompletionTokens))
	}
	if r.Quota > 0 {
		s.quota.Add(float64(r.Quota))
	}
}

func (m *Metrics) newSeries(k seriesKey) *callSeries {
	status := strconv.Itoa(k.status)
	if k.status == 0 {
		status = "client_closed"
	}
	s := &callSeries{
		requests:   m.requests.WithLabelValues(k.endpoint, k.model, k.channel, status, k.billing),
		upstream:   m.upstream.WithLabelValues(k.model),
		gateway:    m.gateway.WithLabelValues(k.model),
		total:      m.total.WithLabelValues(k.model),
		prompt:     m.tokens.WithLabelValues(k.model, "prompt"),
		completion: m.tokens.WithLabelValues(k.model, "completion"),
		quota:      m.quota.WithLabelValues(k.model),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.series[k]; old != nil {
		return old
	}
	m.series[k] = s
	return s
}

// UpstreamFailed counts one failed upstream attempt (relay.Observer).
func (m *Metrics) UpstreamFailed(channel, kind string) {
	k := [2]string{orNone(channel), kind}
	m.mu.RLock()
	c := m.failures[k]
	m.mu.RUnlock()
	if c == nil {
		c = m.upstreamErrors.WithLabelValues(k[0], k[1])
		m.mu.Lock()
		m.failures[k] = c
		m.mu.Unlock()
	}
	c.Inc()
}

// LedgerCommit observes one ledger group commit.
func (m *Metrics) LedgerCommit(d time.Duration) { m.ledgerCommit.Observe(d.Seconds()) }

// LogCommit returns the observer of one log writer's batch inserts.
func (m *Metrics) LogCommit(writer string) func(time.Duration) {
	h := m.logCommit.WithLabelValues(writer)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

// PaymentCallback counts one payment callback: accepted, or rejected for
// reason (a short fixed word: bad_signature, unknown_order…).
func (m *Metrics) PaymentCallback(provider string, accepted bool, reason string) {
	outcome := "accepted"
	if !accepted {
		outcome = "rejected"
	}
	m.callbacks.WithLabelValues(orNone(provider), outcome, orNone(reason)).Inc()
}

// ClusterAuthRefused counts one internal cluster call refused for reason
// (a short fixed word: bad_signature, unknown_node…).
func (m *Metrics) ClusterAuthRefused(reason string) {
	m.clusterRefused.WithLabelValues(orNone(reason)).Inc()
}

// orNone is a label value for an empty string.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// factory registers series under the namespace.
type factory struct{ reg *prometheus.Registry }

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(v)
	return v
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(v)
	return v
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}
