package metrics

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/modelgate/modelgate/internal/store"
)

// Sources is the state other packages keep, read at scrape time. A nil
// function leaves its series out.
type Sources struct {
	Log *slog.Logger
	// Inflight is the /v1 calls being served (each paid one holds a
	// reservation until it settles).
	Inflight func() int64
	// Channels lists the channels and their statuses (a small query).
	Channels func(ctx context.Context) ([]store.ChannelState, error)
	// Breakers lists this node's breakers.
	Breakers func() []breaker.View
	// LedgerQueue and LogQueues are queue depths (LogQueues by writer).
	LedgerQueue func() int
	LogQueues   map[string]func() int
	// RateLimits is the limiter's counters.
	RateLimits func() ratelimit.Status
	// DBRoundTrips is the statements sent to the database so far
	// (store.Store.RoundTrips).
	DBRoundTrips func() int64
	// Cluster reads the peers' state (cluster mode only).
	Cluster func(ctx context.Context) ([]Peer, error)
}

// Peer is one cluster peer as seen from this node.
type Peer struct {
	NodeID int
	Name   string
	// Pending is how many of this node's events the peer has not
	// acknowledged (a count of events, not a difference of ids); Lag the
	// age in seconds of the oldest of them (0: none); HeartbeatAge the
	// seconds since it last answered a ping (-1: never); PingFailures its
	// consecutive failed pings; NeedsResync is true when it needs events
	// pruned here (pushing to it stopped).
	Pending      int64
	Lag          float64
	HeartbeatAge float64
	PingFailures int
	NeedsResync  bool
}

// scrapeTimeout bounds the database reads of one scrape.
const scrapeTimeout = 3 * time.Second

// Watch registers the collector of src's state.
func (m *Metrics) Watch(src Sources) {
	if src.Log == nil {
		src.Log = slog.New(slog.DiscardHandler)
	}
	m.Registry.MustRegister(&stateCollector{src: src})
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

var (
	inflightDesc      = desc("relay_inflight", "Relay calls being served now; each paid one holds a reservation until it settles.")
	channelStatusDesc = desc("channel_status", "Each channel's status: 1 enabled, 2 disabled by an admin, 3 disabled automatically.", "channel")
	channelsDesc      = desc("channels", "Channels by status (enabled, disabled, auto_disabled).", "status")
	breakerDesc       = desc("breaker_state", "Each channel breaker's state for a model: 0 closed, 1 open, 2 half-open (probing).", "channel", "model")
	breakersDesc      = desc("breakers", "This node's channel breakers by state (closed, open, half_open).", "state")
	ledgerQueueDesc   = desc("ledger_queue_depth", "Reservations and settlements waiting for the billing ledger's next commit.")
	logQueueDesc      = desc("logwriter_queue_depth", "Rows waiting in a log writer's queue.", "writer")
	rlRefusedDesc     = desc("ratelimit_refused_total", "Calls refused by a key's or group's rate limit (including those refused because Redis failed and RateLimitFailClosed is on).")
	rlFailClosedDesc  = desc("ratelimit_failed_closed_total", "Calls refused because Redis did not answer and RateLimitFailClosed is on.")
	rlRedisErrDesc    = desc("ratelimit_redis_errors_total", "Failed calls from the rate limiter to Redis.")
	rlRedisDownDesc   = desc("ratelimit_redis_down", "1 while the rate limiter's last call to Redis failed.")
	peerPendingDesc   = desc("cluster_peer_pending_events", "This node's replication events a peer has not acknowledged yet.", "peer")
	peerLagDesc       = desc("cluster_peer_heartbeat_age_seconds", "Seconds since a peer last answered a ping (-1: never).", "peer")
	peerEventLagDesc  = desc("cluster_peer_lag_seconds", "Age of the oldest of this node's replication events a peer has not acknowledged (0: none).", "peer")
	peerResyncDesc    = desc("cluster_peer_needs_resync", "1 while a peer needs replication events this node has pruned: pushing to it stopped until it joins again from a snapshot.", "peer")
	peerPingFailDesc  = desc("cluster_peer_ping_failures", "A peer's consecutive failed pings.", "peer")
	dbRoundTripsDesc  = desc("db_round_trips_total", "Statements sent to the database, each transaction's BEGIN and COMMIT or ROLLBACK included.")
	scrapeErrDesc     = desc("scrape_errors", "Sources that failed during this scrape (1 each), by source.", "source")
)

// stateCollector reads Sources on each scrape (an unchecked collector:
// its label sets depend on the state).
type stateCollector struct{ src Sources }

// Describe sends nothing: the collector is unchecked, since which series
// exist depends on the channels, breakers and peers of the moment.
func (c *stateCollector) Describe(chan<- *prometheus.Desc) {}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s := c.src
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	failed := func(source string, err error) {
		s.Log.Warn("metrics: reading state failed", "source", source, "err", err)
		gauge(scrapeErrDesc, 1, source)
	}
	if s.Inflight != nil {
		gauge(inflightDesc, float64(s.Inflight()))
	}
	names := map[int64]string{}
	if s.Channels != nil {
		states, err := s.Channels(ctx)
		if err != nil {
			failed("channels", err)
		}
		counts := map[string]int{"enabled": 0, "disabled": 0, "auto_disabled": 0}
		used := map[string]bool{}
		for _, st := range states {
			label := channelLabel(st.ID, st.Name)
			if used[label] { // two channels of one name: the second gets its id
				label = channelLabel(st.ID, "")
			}
			used[label] = true
			names[st.ID] = label
			gauge(channelStatusDesc, float64(st.Status), label)
			switch st.Status {
			case channel.StatusEnabled:
				counts["enabled"]++
			case channel.StatusDisabled:
				counts["disabled"]++
			case channel.StatusAutoDisabled:
				counts["auto_disabled"]++
			}
		}
		for k, n := range counts {
			gauge(channelsDesc, float64(n), k)
		}
	}
	if s.Breakers != nil {
		counts := map[string]int{"closed": 0, "open": 0, "half_open": 0}
		for _, v := range s.Breakers() {
			gauge(breakerDesc, float64(v.State), channelLabel(v.Channel, names[v.Channel]), v.Model)
			counts[v.State.String()]++
		}
		for k, n := range counts {
			gauge(breakersDesc, float64(n), k)
		}
	}
	if s.LedgerQueue != nil {
		gauge(ledgerQueueDesc, float64(s.LedgerQueue()))
	}
	for name, f := range s.LogQueues {
		gauge(logQueueDesc, float64(f()), name)
	}
	if s.RateLimits != nil {
		st := s.RateLimits()
		counter(rlRefusedDesc, float64(st.Refused))
		counter(rlFailClosedDesc, float64(st.FailedClosed))
		counter(rlRedisErrDesc, float64(st.RedisErrors))
		down := 0.0
		if st.RedisDown {
			down = 1
		}
		gauge(rlRedisDownDesc, down)
	}
	if s.DBRoundTrips != nil {
		counter(dbRoundTripsDesc, float64(s.DBRoundTrips()))
	}
	if s.Cluster != nil {
		peers, err := s.Cluster(ctx)
		if err != nil {
			failed("cluster", err)
		}
		for _, p := range peers {
			label := p.Name
			if label == "" {
				label = "node-" + strconv.Itoa(p.NodeID)
			}
			gauge(peerPendingDesc, float64(p.Pending), label)
			gauge(peerEventLagDesc, p.Lag, label)
			resync := 0.0
			if p.NeedsResync {
				resync = 1
			}
			gauge(peerResyncDesc, resync, label)
			gauge(peerLagDesc, p.HeartbeatAge, label)
			gauge(peerPingFailDesc, float64(p.PingFailures), label)
		}
	}
}

// channelLabel is a channel's name, or "#id" when it has none (or is
// gone): names are the operator's, so the label set stays bounded.
func channelLabel(id int64, name string) string {
	if name == "" {
		return "#" + strconv.FormatInt(id, 10)
	}
	return name
}
