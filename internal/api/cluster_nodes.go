package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the cluster endpoints.
const (
	MsgClusterOff   = "集群模式未开启"
	MsgNodeNotFound = "集群节点不存在"
	MsgNodeIDTaken  = "node_id 已被其他节点使用"
	// MsgNodeExists answers a create of a node already in the table (a
	// ping or discovery recorded it): completing it is an update.
	MsgNodeExists      = "该 node_id 的节点已在节点表中(可能由 ping 或发现自动创建);请用 PUT /api/cluster_node/ 带上它的 id 填写 secret_key 或修改它"
	MsgNodeIDSelf      = "node_id 是本节点自己的编号,不能作为其他节点"
	MsgNodeNoSecret    = "该节点还没有 secret_key,无法 ping;请先用 PUT /api/cluster_node/ 填写"
	MsgClusterSecret   = "集群密钥无效"
	MsgClusterNodeSelf = "ping 的发送方 node_id 与本节点相同"
)

// ClusterDeps is what the cluster endpoints need. With Enabled false
// (CLUSTER_NODE_ID unset) every cluster route answers MsgClusterOff.
type ClusterDeps struct {
	Enabled bool
	// Self is this node: id, name, address and CLUSTER_SECRET.
	Self cluster.Node
	// PreviousSecret is CLUSTER_PREVIOUS_SECRET during a rotation: still
	// accepted in X-Cluster-Secret, and signs this node's snapshot pull.
	PreviousSecret string
	// Now is the clock internal calls' timestamps are checked against;
	// nil is time.Now.
	Now func() time.Time
	// AuthRefused counts an internal call refused for a short reason
	// (metrics); nil counts none.
	AuthRefused func(reason string)
	// Pinger pings one node now (GET /api/cluster_node/ping/{id}).
	Pinger NodePinger
	// BatchSize is CLUSTER_BATCH_SIZE: the most events a sync batch holds.
	BatchSize int
	// MaxClockSkew is CLUSTER_MAX_CLOCK_SKEW: a batch holding an event
	// dated further past this node's clock is refused (0: the default).
	MaxClockSkew time.Duration
	// Owner sends credits of codes and orders other nodes own to them;
	// nil (cluster mode off) credits everything here.
	Owner *owner.Router
}

// maxClockSkew is MaxClockSkew, or its default.
func (d ClusterDeps) maxClockSkew() time.Duration {
	if d.MaxClockSkew > 0 {
		return d.MaxClockSkew
	}
	return replica.DefaultMaxClockSkew
}

// NodePinger pings a peer, records the outcome and learns its list.
type NodePinger interface {
	Ping(ctx context.Context, node store.ClusterNode) cluster.PingResult
}

// clusterOn wraps a cluster route: it answers MsgClusterOff when cluster
// mode is off, so nothing else changes then.
func (s *Server) clusterOn(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !s.Cluster.Enabled {
			return httpx.Fail(MsgClusterOff)
		}
		return h(w, r)
	}
}

// nodeView is a node record as the public ping answer shows it: no secret.
type nodeView struct {
	ID            int64  `json:"id"`
	NodeID        int    `json:"node_id"`
	NodeName      string `json:"node_name"`
	Address       string `json:"address"`
	Status        int    `json:"status"`
	LastHeartbeat int64  `json:"last_heartbeat"`
	PingFailures  int    `json:"ping_failures"`
	Disabled      bool   `json:"disabled"`
	CreatedAt     int64  `json:"created_at"`
	UpdatedAt     int64  `json:"updated_at"`
}

// adminNodeView is a node record as root sees it: with secret_key (spec)
// and its state (cluster.State: alive, failed, awaiting_secret; the list
// and the read also needs_resync).
type adminNodeView struct {
	nodeView
	State     string `json:"state"`
	SecretKey string `json:"secret_key"`
}

func viewNode(n *store.ClusterNode) nodeView {
	return nodeView{ID: n.ID, NodeID: n.NodeID, NodeName: n.NodeName, Address: n.Address, Status: n.Status,
		LastHeartbeat: n.LastHeartbeat, PingFailures: n.PingFailures, Disabled: n.Disabled,
		CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
}

func viewAdminNode(n *store.ClusterNode) adminNodeView {
	state := cluster.State(cluster.Peer{Status: n.Status, HasSecret: n.SecretKey != ""})
	return adminNodeView{nodeView: viewNode(n), State: state, SecretKey: n.SecretKey}
}

// replicationView is a peer's replication as this node sees it (issue 24
// §2), shown by the list and the read of a node record.
type replicationView struct {
	// PendingEvents counts this node's events the peer has not
	// acknowledged; LagSeconds is the age of the oldest of them (0: none).
	PendingEvents int64 `json:"pending_events"`
	LagSeconds    int64 `json:"lag_seconds"`
	// AppliedSeq is the last seq of the peer's events applied here;
	// AckedSeq the last seq of this node's events the peer acknowledged.
	AppliedSeq int64 `json:"applied_seq"`
	AckedSeq   int64 `json:"acked_seq"`
}

// statusNodeView is a node record with its replication; its state may be
// needs_resync, which only the replication shows.
type statusNodeView struct {
	adminNodeView
	replicationView
}

func viewReplication(rep replica.PeerReplication, now int64) replicationView {
	v := replicationView{
		PendingEvents: rep.Pending,
		AppliedSeq:    rep.Applied / cluster.IDStride,
		AckedSeq:      rep.Acked / cluster.IDStride,
	}
	if rep.Pending > 0 {
		v.LagSeconds = max(now-rep.OldestPending, 0)
	}
	return v
}

// viewNodesStatus views rows with their replication, read in one go.
func (s *Server) viewNodesStatus(ctx context.Context, rows []store.ClusterNode) ([]statusNodeView, error) {
	reps, start, err := s.Replica.ReplicationState(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	views := make([]statusNodeView, len(rows))
	for i := range rows {
		rep := reps[rows[i].NodeID]
		v := statusNodeView{viewAdminNode(&rows[i]), viewReplication(rep, now)}
		v.State = cluster.State(cluster.Peer{Status: rows[i].Status, HasSecret: rows[i].SecretKey != "",
			NeedsResync: cluster.NeedsResync(rep.Acked, start)})
		views[i] = v
	}
	return views, nil
}

func (s *Server) listClusterNodes(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListClusterNodes(r.Context(), pg)
	if err != nil {
		return err
	}
	views, err := s.viewNodesStatus(r.Context(), rows)
	if err != nil {
		return err
	}
	return httpx.OKList(w, views, total)
}

func (s *Server) getClusterNode(w http.ResponseWriter, r *http.Request) error {
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	views, err := s.viewNodesStatus(r.Context(), []store.ClusterNode{n})
	if err != nil {
		return err
	}
	return httpx.OK(w, views[0])
}

// clusterNode reads the record of the path's id.
func (s *Server) clusterNode(r *http.Request) (store.ClusterNode, error) {
	id, err := httpx.PathID(r)
	if err != nil {
		return store.ClusterNode{}, err
	}
	n, err := s.Store.ClusterNodeByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return n, httpx.Fail(MsgNodeNotFound)
	}
	return n, err
}

// nodeRequest is the body of create and update; nil: not sent.
type nodeRequest struct {
	ID        int64   `json:"id"`
	NodeID    *int    `json:"node_id"`
	NodeName  *string `json:"node_name"`
	Address   *string `json:"address"`
	SecretKey *string `json:"secret_key"`
	Disabled  *bool   `json:"disabled"`
}

// apply sets the sent fields on n and checks the result whole.
func (req *nodeRequest) apply(n *cluster.Node, self int) error {
	setIfSent(&n.NodeID, req.NodeID)
	setIfSent(&n.Name, req.NodeName)
	setIfSent(&n.Address, req.Address)
	setIfSent(&n.Secret, req.SecretKey)
	*n = n.Normalize()
	if msg := n.Check(); msg != "" {
		return httpx.Fail(msg)
	}
	if n.NodeID == self {
		return httpx.Fail(MsgNodeIDSelf)
	}
	return nil
}

func (s *Server) createClusterNode(w http.ResponseWriter, r *http.Request) error {
	var req nodeRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	var n cluster.Node
	if req.NodeID == nil {
		return httpx.Fail(cluster.MsgNodeIDRange)
	}
	if err := req.apply(&n, s.Cluster.Self.NodeID); err != nil {
		return err
	}
	row := store.ClusterNode{NodeID: n.NodeID, NodeName: n.Name, Address: n.Address, SecretKey: n.Secret}
	err := s.Store.CreateClusterNode(r.Context(), &row)
	if errors.Is(err, store.ErrDuplicate) {
		return httpx.Fail(MsgNodeExists)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewAdminNode(&row))
}

func (s *Server) updateClusterNode(w http.ResponseWriter, r *http.Request) error {
	var req nodeRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	row, err := s.Store.UpdateClusterNode(r.Context(), req.ID, func(row *store.ClusterNode) error {
		n := cluster.Node{NodeID: row.NodeID, Name: row.NodeName, Address: row.Address, Secret: row.SecretKey}
		if err := req.apply(&n, s.Cluster.Self.NodeID); err != nil {
			return err
		}
		row.NodeID, row.NodeName, row.Address, row.SecretKey = n.NodeID, n.Name, n.Address, n.Secret
		setIfSent(&row.Disabled, req.Disabled)
		return nil
	})
	return s.writeNodeChange(w, row, err)
}

// writeNodeChange answers an update of a node record.
func (s *Server) writeNodeChange(w http.ResponseWriter, row store.ClusterNode, err error) error {
	var refused *httpx.Error
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgNodeNotFound)
	case errors.Is(err, store.ErrDuplicate):
		return httpx.Fail(MsgNodeIDTaken)
	case errors.As(err, &refused):
		return refused
	case err != nil:
		return err
	}
	return httpx.OK(w, viewAdminNode(&row))
}

// deleteClusterNode is the soft delete of the spec: disabled=true, the
// record stays.
func (s *Server) deleteClusterNode(w http.ResponseWriter, r *http.Request) error {
	return s.setNodeDisabled(w, r, true)
}

func (s *Server) enableClusterNode(w http.ResponseWriter, r *http.Request) error {
	return s.setNodeDisabled(w, r, false)
}

func (s *Server) setNodeDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	row, err := s.Store.SetClusterNodeDisabled(r.Context(), id, disabled)
	return s.writeNodeChange(w, row, err)
}

// pingView is the answer of a diagnostic ping.
type pingView struct {
	OK      bool          `json:"ok"`
	RTTMs   int64         `json:"rtt_ms"`
	Learned int           `json:"learned"`
	Error   string        `json:"error"`
	Node    adminNodeView `json:"node"`
}

// pingClusterNode pings one node now, whatever its status or disabled
// flag (diagnosis), records the outcome and answers it.
func (s *Server) pingClusterNode(w http.ResponseWriter, r *http.Request) error {
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	if strings.TrimSpace(n.SecretKey) == "" {
		return httpx.Fail(MsgNodeNoSecret)
	}
	res := s.Cluster.Pinger.Ping(r.Context(), n)
	after, err := s.Store.ClusterNodeByID(r.Context(), n.ID)
	if err != nil {
		return err
	}
	return httpx.OK(w, pingView{OK: res.OK, RTTMs: res.RTT.Milliseconds(), Learned: res.Learned, Error: res.Err,
		Node: viewAdminNode(&after)})
}
