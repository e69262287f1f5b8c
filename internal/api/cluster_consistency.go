package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/cluster/consistency"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the consistency check, the resync and the failed events
// (docs/cluster.md, Consistency check, Resync).
const (
	MsgResyncOwnPruned     = "本节点有尚未被该节点应用的自身变更已从发件箱清除,重新同步会丢失它们;确认后用 force: true 重试"
	MsgFailedEventNotFound = "该失败事件不存在"
)

// maxJoinTokenBytes bounds the token of a join or resync.
const maxJoinTokenBytes = 512

// clusterDigest answers POST /api/cluster/digest: a peer with this node's
// secret gets this node's digest (replica.Digest). The body is ignored.
func (s *Server) clusterDigest(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Replica.Digest(r.Context())
	if err != nil {
		return err
	}
	return httpx.OK(w, d)
}

// clusterConsistency answers GET /api/cluster/consistency: this node's
// digest compared with every enabled peer's that has a secret.
func (s *Server) clusterConsistency(w http.ResponseWriter, r *http.Request) error {
	c := &consistency.Checker{Store: checkerStore{s.Store, s.Replica}, Self: s.peerSelf()}
	rep, err := c.Check(r.Context())
	if err != nil {
		return err
	}
	for _, p := range rep.Peers {
		if !p.OK || len(p.Differing) > 0 {
			s.Log.Warn("cluster consistency check", "node_id", p.NodeID, "ok", p.OK, "caught_up", p.CaughtUp,
				"differing", strings.Join(p.Differing, ","))
		}
	}
	return httpx.OK(w, rep)
}

// resyncRequest is the body of a resync; it may be empty.
type resyncRequest struct {
	// Token is the join token the peer gave (sent as X-Cluster-Join-Token
	// when not empty).
	Token string `json:"token"`
	// Force resyncs even when own events the peer has not applied are gone
	// from this node's outbox (they are lost here).
	Force bool `json:"force"`
}

// resyncView is the answer of a resync.
type resyncView struct {
	SourceNodeID int              `json:"source_node_id"`
	Rows         int64            `json:"rows"`
	Positions    map[string]int64 `json:"positions"`
	Replayed     int              `json:"replayed"`
}

// resyncCluster answers POST /api/cluster_node/{id}/resync on a node that
// has data: it pulls that peer's snapshot and replaces this node's
// replicated data by it (docs/cluster.md, Resync).
func (s *Server) resyncCluster(w http.ResponseWriter, r *http.Request) error {
	var req resyncRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(w, r, &req); err != nil {
			return err
		}
	}
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	var res replica.Resync
	err = s.pullSnapshot(r, n, req.Token, func(ctx context.Context, next func() ([]byte, error)) (err error) {
		res, err = s.Replica.ResyncSnapshot(ctx, next, req.Force)
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, replica.ErrOwnEventsPruned):
		s.Log.Warn("cluster resync refused", "node_id", n.NodeID, "err", err)
		return httpx.Fail(MsgResyncOwnPruned)
	default:
		return s.snapshotFailure("cluster resync", "resync: ", n, err)
	}
	s.Log.Info("resynced from a peer's snapshot", "node_id", n.NodeID, "address", n.Address, "rows", res.Rows,
		"replayed", res.Replayed, "force", req.Force)
	view := resyncView{SourceNodeID: n.NodeID, Rows: res.Rows, Positions: map[string]int64{}, Replayed: res.Replayed}
	for node, id := range res.Positions {
		view.Positions[strconv.Itoa(node)] = id
	}
	return httpx.OK(w, view)
}

// checkerStore is what the consistency check reads here: the node table
// (store) and this node's digest (replica).
type checkerStore struct {
	*store.Store
	*replica.Replica
}
