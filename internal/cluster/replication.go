package cluster

// Peer states of the node list (GET /api/cluster_node/, field state).
const (
	StateAlive          = "alive"
	StateFailed         = "failed"
	StateAwaitingSecret = "awaiting_secret"
	// StateNeedsResync is a peer that needs events this node no longer
	// keeps (pruned): pushing to it stopped, it must join again from a
	// snapshot (docs/cluster.md, Replication).
	StateNeedsResync = "needs_resync"
)

// State is how the node list shows a peer with ping status status: a peer
// that needs a resync first (nothing reaches it until an operator acts),
// then one without a secret (neither pinged nor pushed to), then failed or
// alive as its pings say.
func State(status int, hasSecret, needsResync bool) string {
	switch {
	case needsResync:
		return StateNeedsResync
	case !hasSecret:
		return StateAwaitingSecret
	case status == StatusFailed:
		return StateFailed
	}
	return StateAlive
}

// NeedsResync reports whether a peer whose cursor is acked (the last of
// this node's events it acknowledged) needs an event this node no longer
// keeps: start is the oldest event the outbox keeps (or the next it will
// write, when it is empty). A peer that acknowledged nothing (0) is not
// judged here: its refusal of a batch names the event it needs, and its
// cursor is then set just below it (issue 24 §2).
func NeedsResync(acked, start int64) bool {
	return acked != 0 && acked+IDStride < start
}
