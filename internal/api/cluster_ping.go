package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/ping"
	"github.com/modelgate/modelgate/internal/httpx"
)

// clusterPing answers POST /api/cluster/ping (spec): a peer tells who it
// is; this node records it and answers every node it knows, without
// secrets, for transitive discovery. clusterPeer (anyPinger) proved the
// sender when this node holds its secret. Only such a signed ping changes
// a record (its name, address and secret: how a new secret spreads); a
// node not in the table is recorded without a secret, awaiting root's; a
// recorded node without a secret changes nothing (docs/cluster.md, Ping).
func (s *Server) clusterPing(w http.ResponseWriter, r *http.Request) error {
	var req ping.Request
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	body := cluster.Node{NodeID: req.NodeID, Name: req.NodeName, Address: req.Address, Secret: req.SecretKey}.Normalize()
	if msg := body.Check(); msg != "" {
		return httpx.Fail(msg)
	}
	if body.NodeID == s.Cluster.Self.NodeID {
		s.Log.Warn("cluster ping from a node with this node's id: two nodes share CLUSTER_NODE_ID",
			"node_id", body.NodeID, "address", body.Address, "remote", r.RemoteAddr)
		return httpx.Fail(MsgClusterNodeSelf)
	}
	// The body speaks for the node that signed it only.
	from := senderOf(r)
	if body.NodeID != from.NodeID {
		return s.refusePeer(r, refusedSourceMismatch)
	}
	if err := s.recordPinger(r, from, body); err != nil {
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

// recordPinger stores what a ping's sender said of itself, as far as it is
// trusted (clusterPing).
func (s *Server) recordPinger(r *http.Request, from sender, body cluster.Node) error {
	ctx := r.Context()
	switch {
	case !from.Known:
		added, err := s.Store.AddPingSender(ctx, body)
		if added {
			s.Log.Info("cluster node recorded from its ping, awaiting its secret_key: set it with PUT /api/cluster_node/",
				"node_id", body.NodeID, "address", body.Address, "remote", r.RemoteAddr)
		}
		return err
	case !from.Verified:
		if body.Address != from.Node.Address || body.Name != from.Node.NodeName {
			s.Log.Warn("cluster ping from a node awaiting its secret_key: its record is not changed",
				"node_id", body.NodeID, "address", from.Node.Address, "sent_address", body.Address, "remote", r.RemoteAddr)
		}
		return nil
	}
	if body.Address == from.Node.Address && body.Name == from.Node.NodeName && body.Secret == from.Node.SecretKey {
		return nil
	}
	updated, err := s.Store.RecordPingSender(ctx, body, from.Node.SecretKey)
	if err != nil {
		return err
	}
	if updated {
		s.Log.Info("cluster node updated by its signed ping", "node_id", body.NodeID, "address", body.Address,
			"secret_changed", body.Secret != from.Node.SecretKey)
	}
	return nil
}
