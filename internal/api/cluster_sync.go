package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/httpx"
)

// clusterSync answers POST /api/cluster/sync (spec): a peer (clusterPeer
// proved it) pushes a batch of its own events; this node applies them in one transaction and answers
// only once they are committed (docs/cluster.md, Replication).
func (s *Server) clusterSync(w http.ResponseWriter, r *http.Request) error {
	var b replicate.Batch
	if err := httpx.DecodeLimit(w, r, &b, replicate.MaxBatchBytes); err != nil {
		return err
	}
	events, msg, args := replicate.CheckBatch(b, s.Cluster.Self.NodeID, s.Cluster.BatchSize)
	if msg == "" {
		msg, args = replicate.CheckClock(events, time.Now(), s.Cluster.maxClockSkew())
	}
	if msg != "" {
		s.Log.Warn("cluster sync batch refused", "source_node_id", b.SourceNodeID, "events", len(b.Events), "remote", r.RemoteAddr,
			"reason", fmt.Sprintf(msg, args...))
		return httpx.Failf(msg, args...)
	}
	// The batch speaks for the node that signed it only: one peer cannot
	// push events as another.
	if b.SourceNodeID != senderOf(r).NodeID {
		return s.refusePeer(r, refusedSourceMismatch)
	}
	applied, skipped, err := s.Replica.ApplyEvents(r.Context(), b.SourceNodeID, events)
	var gap *replica.SequenceError
	if errors.As(err, &gap) {
		// Nothing applied: the sender resends from the event named
		// (issue 24 §2), or finds it pruned and reports the peer as
		// needing a resync.
		s.Log.Warn("cluster sync batch refused: out of sequence", "source_node_id", b.SourceNodeID, "events", len(b.Events),
			"first_id", events[0].ID, "expected_id", gap.Expected, "remote", r.RemoteAddr)
		e := httpx.Failf(replicate.MsgOutOfSequence, gap.Expected)
		e.Data = replicate.Refused{ExpectedID: gap.Expected}
		return e
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, replicate.Answer{Applied: applied, Skipped: skipped})
}
