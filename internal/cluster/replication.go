package cluster

// NeedsResync reports whether a peer whose cursor is acked (the last of
// this node's events it acknowledged) needs an event this node no longer
// keeps: start is the oldest event the outbox keeps (or the next it will
// write, when it is empty). A peer that acknowledged nothing (0) is not
// judged here: its refusal of a batch names the event it needs, and its
// cursor is then set just below it (issue 24 §2).
func NeedsResync(acked, start int64) bool {
	return acked != 0 && acked+IDStride < start
}
