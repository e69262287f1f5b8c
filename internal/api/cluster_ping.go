package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/ping"
	"github.com/modelgate/modelgate/internal/httpx"
)

// clusterPing answers POST /api/cluster/ping (spec): a peer with this
// node's secret tells who it is; this node records it and answers every
// node it knows, without secrets, for transitive discovery.
func (s *Server) clusterPing(w http.ResponseWriter, r *http.Request) error {
	if err := s.clusterAuth(r, "cluster ping"); err != nil {
		return err
	}
	var req ping.Request
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	sender := cluster.Node{NodeID: req.NodeID, Name: req.NodeName, Address: req.Address, Secret: req.SecretKey}.Normalize()
	if msg := sender.Check(); msg != "" {
		return httpx.Fail(msg)
	}
	if sender.NodeID == s.Cluster.Self.NodeID {
		s.Log.Warn("cluster ping from a node with this node's id: two nodes share CLUSTER_NODE_ID",
			"node_id", sender.NodeID, "address", sender.Address, "remote", r.RemoteAddr)
		return httpx.Fail(MsgClusterNodeSelf)
	}
	if err := s.Store.RecordPingSender(r.Context(), sender); err != nil {
		return err
	}
	rows, err := s.Store.AllClusterNodes(r.Context())
	if err != nil {
		return err
	}
	views := make([]nodeView, len(rows))
	for i := range rows {
		views[i] = viewNode(&rows[i])
	}
	return httpx.OK(w, map[string]any{"nodes": views})
}

// clusterAuth checks the cluster secret of an internal call (what names
// it in the log). A missing and a wrong secret get the same answer, no
// detail, and are logged with the caller's address, never the value.
func (s *Server) clusterAuth(r *http.Request, what string) error {
	if !s.secretMatches(r.Header.Get(peer.SecretHeader)) {
		s.Log.Warn(what+" refused: missing or wrong X-Cluster-Secret", "remote", r.RemoteAddr)
		return httpx.FailStatus(http.StatusUnauthorized, MsgClusterSecret)
	}
	return nil
}

// secretMatches compares got with CLUSTER_SECRET in constant time. Both
// are hashed first, so neither the length nor a prefix of the secret shows
// in the time taken.
func (s *Server) secretMatches(got string) bool {
	if got == "" || s.Cluster.Self.Secret == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.Cluster.Self.Secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
