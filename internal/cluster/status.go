package cluster

// Peer status values (spec: Cluster node).
const (
	StatusAlive  = 1
	StatusFailed = 2
)

// States of a peer as root's node view shows them (the state field; the
// spec's int status stays beside it).
const (
	StateAlive          = "alive"
	StateFailed         = "failed"
	StateAwaitingSecret = "awaiting_secret"
	// StateNeedsResync is a peer that needs events this node no longer
	// keeps (pruned): pushing to it stopped until it resyncs from a
	// snapshot (docs/cluster.md, Replication).
	StateNeedsResync = "needs_resync"
)

// Peer is what a peer's state is computed from.
type Peer struct {
	Status int
	// HasSecret: the record holds the peer's secret.
	HasSecret bool
	// NeedsResync: the peer needs events this node pruned (NeedsResync).
	NeedsResync bool
}

// State is p's state: needs_resync first (nothing reaches such a peer
// until an operator acts), then awaiting_secret while the record has no secret
// (whatever its status: such a peer is neither pinged, pushed to nor
// heard), else failed or alive by its status. The rules are checked in
// order; a new state takes its place in the list by precedence.
func State(p Peer) string {
	switch {
	case p.NeedsResync:
		return StateNeedsResync
	case !p.HasSecret:
		return StateAwaitingSecret
	case p.Status == StatusFailed:
		return StateFailed
	default:
		return StateAlive
	}
}

// FailedPingEvery is the pace of pings to a failed peer: every 5th ping
// round instead of every round. It keeps a dead peer from costing a
// timeout every interval, and still brings it back by itself within five
// intervals of its return (issue 11 §3).
const FailedPingEvery = 5

// Health is the part of a node record that ping outcomes move.
type Health struct {
	Status        int
	PingFailures  int
	LastHeartbeat int64
}

// Succeeded is h after a ping answered at now: alive, no failures.
func (h Health) Succeeded(now int64) Health {
	return Health{Status: StatusAlive, PingFailures: 0, LastHeartbeat: now}
}

// Failed is h after a failed ping: one more consecutive failure, and
// failed from maxFailures (CLUSTER_MAX_PING_FAILURES) on. The count stops
// growing far past the threshold, so it cannot overflow on a peer that
// never returns.
func (h Health) Failed(maxFailures int) Health {
	if h.PingFailures < maxFailures+1_000_000 {
		h.PingFailures++
	}
	if h.PingFailures >= maxFailures {
		h.Status = StatusFailed
	} else if h.Status != StatusFailed {
		// A new record has status 0 until its first outcome: a first
		// failure under the threshold leaves it "alive" as the threshold
		// says it is not failed yet.
		h.Status = StatusAlive
	}
	return h
}

// DueInRound says whether a peer with status is pinged in ping round
// number round (counted from 0): every round when it is alive, every
// FailedPingEvery-th round when it is failed.
func DueInRound(status int, round int64) bool {
	return status != StatusFailed || round%FailedPingEvery == 0
}
