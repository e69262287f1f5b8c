package api

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/cluster/join"
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
)

// clusterSnapshot answers POST /api/cluster/snapshot: a peer with this
// node's secret gets all of this node's data, as newline-delimited JSON
// read in one consistent transaction (store.WriteSnapshot).
func (s *Server) clusterSnapshot(w http.ResponseWriter, r *http.Request) error {
	if err := s.clusterAuth(r, "cluster snapshot"); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	lines := 0
	err := s.Store.WriteSnapshot(r.Context(), func(line []byte) error {
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

// joinCluster answers POST /api/cluster_node/{id}/join on a new, empty
// node: it pulls that peer's snapshot and replaces this node's data (the
// seeds) by it (docs/cluster.md, Joining a new node).
func (s *Server) joinCluster(w http.ResponseWriter, r *http.Request) error {
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	switch {
	case n.Disabled:
		return httpx.Fail(MsgJoinDisabled)
	case strings.TrimSpace(n.SecretKey) == "":
		return httpx.Fail(MsgJoinNoSecret)
	}
	// The pull outlives a client that gives up waiting: a join half done
	// would roll back anyway, but finishing it is what the operator asked.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), join.Timeout)
	defer cancel()
	stream := join.Pull(ctx, n.Address, n.SecretKey)
	defer stream.Close()
	rows, positions, err := s.Store.LoadSnapshot(ctx, stream.Next)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFresh):
		s.Log.Warn("cluster join refused", "err", err)
		return httpx.Fail(MsgJoinNotFresh)
	case errors.Is(err, store.ErrSnapshotBehind):
		s.Log.Warn("cluster join refused", "node_id", n.NodeID, "err", err)
		return httpx.Fail(MsgJoinBehind)
	case errors.Is(err, store.ErrBadSnapshot):
		s.Log.Warn("cluster join: bad snapshot", "node_id", n.NodeID, "address", n.Address, "err", err)
		return httpx.Failf(MsgJoinBadStream, strings.TrimPrefix(err.Error(), "load snapshot: "))
	default:
		if pe, ok := join.ErrPeer(err); ok {
			s.Log.Warn("cluster join: pulling the snapshot failed", "node_id", n.NodeID, "address", n.Address, "err", pe.Err)
			return httpx.Failf(MsgJoinPeerFailed, n.Address, pe.Err.Error())
		}
		return err
	}
	s.Log.Info("joined the cluster from a peer's snapshot", "node_id", n.NodeID, "address", n.Address, "rows", rows)
	view := joinView{SourceNodeID: n.NodeID, Rows: rows, Positions: map[string]int64{}}
	for node, id := range positions {
		view.Positions[strconv.Itoa(node)] = id
	}
	return httpx.OK(w, view)
}
