package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/join"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of joining a node (docs/cluster.md, Joining a new node).
const (
	MsgJoinDisabled   = "该节点已停用,不能从它拉取快照"
	MsgJoinNoSecret   = "该节点还没有 secret_key,无法拉取快照;请先用 PUT /api/cluster_node/ 填写"
	MsgJoinNotFresh   = "本节点已有自己的数据,不能用快照加入集群;只有新建的空节点可以加入"
	MsgJoinBehind     = "该节点的数据落后于本节点已收到的同步,请稍后重试"
	MsgJoinBadStream  = "快照不完整或无效,本节点的数据没有改变: %s"
	MsgJoinPeerFailed = "从 %s 拉取快照失败,本节点的数据没有改变: %s"
	// MsgJoinTokenRequired: the joiner's request lacks the token root
	// created on the peer.
	MsgJoinTokenRequired = "token 不能为空:请先在要拉取快照的节点上用 POST /api/cluster_node/join_token 为本节点创建加入令牌"
	// MsgJoinTokenTooLong: no token root created is that long.
	MsgJoinTokenTooLong = "token 过长"
	// MsgJoinTokenNodeNoSecret: a token for a node the serving node could
	// not verify (its record has no secret yet).
	MsgJoinTokenNodeNoSecret = "该节点还没有 secret_key,它的请求无法验证;请先用 PUT /api/cluster_node/ 填写,再创建加入令牌"
)

// joinTokenTTL is how long a join token is valid.
const joinTokenTTL = 15 * time.Minute

// clusterSnapshot answers POST /api/cluster/snapshot: a known peer
// (clusterPeer) with a join token root created here for it gets all of
// this node's data, as newline-delimited JSON read in one consistent
// transaction (replica.WriteSnapshot). The token is spent before the first
// row is read: a second use is refused, even at the same moment.
func (s *Server) clusterSnapshot(w http.ResponseWriter, r *http.Request) error {
	err := s.Store.UseJoinToken(r.Context(), r.Header.Get(join.TokenHeader), senderOf(r).NodeID, s.clusterNow())
	if errors.Is(err, store.ErrNotFound) {
		return s.refusePeer(r, refusedJoinToken)
	} else if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	lines := 0
	err = s.Replica.WriteSnapshot(r.Context(), func(line []byte) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", join.ContentType)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		if lines++; lines%snapshotFlushLines == 0 {
			return bw.Flush()
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil && !started {
		return err
	}
	if err != nil {
		// The stream has no end line: the joiner changes nothing.
		s.Log.Warn("cluster snapshot cut off", "remote", r.RemoteAddr, "err", err)
		return nil
	}
	s.Log.Info("cluster snapshot sent", "remote", r.RemoteAddr, "lines", lines)
	return nil
}

// snapshotFlushLines is how many lines go out per flush.
const snapshotFlushLines = 1000

// joinView is the answer of a join: the rows loaded and, per origin node,
// the last event the loaded data holds.
type joinView struct {
	SourceNodeID int              `json:"source_node_id"`
	Rows         int64            `json:"rows"`
	Positions    map[string]int64 `json:"positions"`
}

// joinTokenRequest is the body of POST /api/cluster_node/join_token.
type joinTokenRequest struct {
	NodeID int `json:"node_id"`
}

// joinTokenView is its answer: the token, shown once.
type joinTokenView struct {
	Token     string `json:"token"`
	NodeID    int    `json:"node_id"`
	ExpiresAt int64  `json:"expires_at"`
}

// createJoinToken answers POST /api/cluster_node/join_token on the node a
// new node will join from: a random single-use token, bound to that node's
// id (already in this node's table, with its secret), valid 15 minutes.
// Only its hash is stored.
func (s *Server) createJoinToken(w http.ResponseWriter, r *http.Request) error {
	var req joinTokenRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if msg := cluster.CheckNodeID(req.NodeID); msg != "" {
		return httpx.Fail(msg)
	}
	n, err := s.Store.ClusterNodeByNodeID(r.Context(), req.NodeID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgNodeNotFound)
	case err != nil:
		return err
	case n.Disabled:
		return httpx.Fail(MsgJoinDisabled)
	case n.SecretKey == "":
		return httpx.Fail(MsgJoinTokenNodeNoSecret)
	}
	token := "mgj_" + rand.Text() + rand.Text()
	expires := s.clusterNow().Add(joinTokenTTL)
	if err := s.Store.CreateJoinToken(r.Context(), token, req.NodeID, expires); err != nil {
		return err
	}
	s.Log.Info("cluster join token created", "node_id", req.NodeID, "expires_at", expires.Unix())
	return httpx.OK(w, joinTokenView{Token: token, NodeID: req.NodeID, ExpiresAt: expires.Unix()})
}

// joinRequest is the body of POST /api/cluster_node/{id}/join.
type joinRequest struct {
	Token string `json:"token"`
}

// joinCluster answers POST /api/cluster_node/{id}/join on a new, empty
// node: it pulls that peer's snapshot with the join token root created
// there for this node, and replaces this node's data (the seeds) by it
// (docs/cluster.md, Joining a new node).
func (s *Server) joinCluster(w http.ResponseWriter, r *http.Request) error {
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	var req joinRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	var rows int64
	var positions map[int]int64
	err = s.pullSnapshot(r, n, req.Token, func(ctx context.Context, next func() ([]byte, error)) (err error) {
		rows, positions, err = s.Replica.LoadSnapshot(ctx, next)
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, replica.ErrNotFresh):
		s.Log.Warn("cluster join refused", "err", err)
		return httpx.Fail(MsgJoinNotFresh)
	default:
		return s.snapshotFailure("cluster join", "load snapshot: ", n, err)
	}
	s.Log.Info("joined the cluster from a peer's snapshot", "node_id", n.NodeID, "address", n.Address, "rows", rows)
	view := joinView{SourceNodeID: n.NodeID, Rows: rows, Positions: map[string]int64{}}
	for node, id := range positions {
		view.Positions[strconv.Itoa(node)] = id
	}
	return httpx.OK(w, view)
}

// peerSelf is this node as it signs its calls to peers.
func (s *Server) peerSelf() peer.Self {
	return peer.Self{NodeID: s.Cluster.Self.NodeID, Secret: s.Cluster.Self.Secret, PreviousSecret: s.Cluster.PreviousSecret}
}

// joinToken is the join token of a join or resync request, trimmed: it is
// required (the serving node opens its snapshot to no one without it) and
// bounded (it travels in a header).
func joinToken(token string) (string, error) {
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return "", httpx.Fail(MsgJoinTokenRequired)
	case len(token) > maxJoinTokenBytes:
		return "", httpx.Fail(MsgJoinTokenTooLong)
	}
	return token, nil
}

// pullSnapshot pulls the snapshot of peer n with the join token root made
// there for this node, and hands its lines to load (a join or a resync).
// The pull outlives a client that gives up waiting: a load half done
// would roll back anyway, but finishing it is what the operator asked.
func (s *Server) pullSnapshot(r *http.Request, n store.ClusterNode, token string,
	load func(ctx context.Context, next func() ([]byte, error)) error) error {
	token, err := joinToken(token)
	if err != nil {
		return err
	}
	switch {
	case n.Disabled:
		return httpx.Fail(MsgJoinDisabled)
	case strings.TrimSpace(n.SecretKey) == "":
		return httpx.Fail(MsgJoinNoSecret)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), join.Timeout)
	defer cancel()
	stream := join.Pull(ctx, s.peerSelf(), peer.Target{Address: n.Address, Secret: n.SecretKey}, token)
	defer stream.Close()
	return load(ctx, stream.Next)
}

// snapshotFailure answers the failures a join and a resync share (what
// names it in the log; prefix is what the load puts before a bad
// stream's reason): a snapshot behind what this node has, a garbled
// stream, a peer that refused or could not be reached.
func (s *Server) snapshotFailure(what, prefix string, n store.ClusterNode, err error) error {
	switch {
	case errors.Is(err, replica.ErrSnapshotBehind):
		s.Log.Warn(what+" refused", "node_id", n.NodeID, "err", err)
		return httpx.Fail(MsgJoinBehind)
	case errors.Is(err, replica.ErrBadSnapshot):
		s.Log.Warn(what+": bad snapshot", "node_id", n.NodeID, "address", n.Address, "err", err)
		return httpx.Failf(MsgJoinBadStream, strings.TrimPrefix(err.Error(), prefix))
	}
	if pe, ok := join.ErrPeer(err); ok {
		s.Log.Warn(what+": pulling the snapshot failed", "node_id", n.NodeID, "address", n.Address, "err", pe.Err)
		return httpx.Failf(MsgJoinPeerFailed, n.Address, pe.Err.Error())
	}
	return err
}
