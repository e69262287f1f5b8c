// Package ping is the cluster's heartbeat: it calls POST /api/cluster/ping
// on each enabled peer every CLUSTER_PING_INTERVAL, records the outcome in
// the node table and adds the nodes the answer lists (docs/cluster.md).
package ping

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/store"
)

// SecretHeader carries the target node's CLUSTER_SECRET (spec, Cluster
// rule 2).
const SecretHeader = peer.SecretHeader

// MaxAnswerBytes bounds a ping answer read from a peer: 49 node records
// fit many times over, and a peer gone wrong cannot fill this node's memory.
const MaxAnswerBytes = 1 << 20

// Timeout bounds one ping: the ping interval, but at least minTimeout (a
// loopback test's short interval) and at most maxTimeout.
const (
	minTimeout = time.Second
	maxTimeout = 5 * time.Second
)

// Request is the body of POST /api/cluster/ping (spec): the sender's own
// identity and secret.
type Request struct {
	NodeID    int    `json:"node_id"`
	NodeName  string `json:"node_name"`
	Address   string `json:"address"`
	SecretKey string `json:"secret_key"`
}

// Answer is the data of a ping's success answer.
type Answer struct {
	Nodes []cluster.Listed `json:"nodes"`
}

// Config is what a Pinger needs.
type Config struct {
	// Self is this node: its id, name, address and CLUSTER_SECRET.
	Self cluster.Node
	// PreviousSecret is CLUSTER_PREVIOUS_SECRET: during a rotation a
	// ping a peer refuses is signed again with it (peer.Self).
	PreviousSecret string
	// Interval is CLUSTER_PING_INTERVAL; MaxFailures CLUSTER_MAX_PING_FAILURES.
	Interval    time.Duration
	MaxFailures int
	Log         *slog.Logger
}

// Pinger pings peers. Its methods may be called concurrently.
type Pinger struct {
	store  *store.Store
	cfg    Config
	caller peer.Caller
	round  atomic.Int64
}

// New returns a Pinger over st.
func New(st *store.Store, cfg Config) *Pinger {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	timeout := min(max(cfg.Interval, minTimeout), maxTimeout)
	self := peer.Self{NodeID: cfg.Self.NodeID, Secret: cfg.Self.Secret, PreviousSecret: cfg.PreviousSecret}
	return &Pinger{store: st, cfg: cfg, caller: peer.Caller{Client: peer.NewClient(timeout), Self: self}}
}

// Round pings every enabled peer that has a secret and is due in this
// round (cluster.DueInRound: failed peers every 5th round), all at once,
// and returns when every ping has ended. The app runs it every interval.
func (p *Pinger) Round(ctx context.Context) error {
	round := p.round.Add(1) - 1
	nodes, err := p.store.AllClusterNodes(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.Disabled || n.SecretKey == "" || n.NodeID == p.cfg.Self.NodeID || !cluster.DueInRound(n.Status, round) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Ping(ctx, n)
		}()
	}
	wg.Wait()
	return nil
}

// Ping pings node now, records the outcome and adds the nodes its answer
// lists. A node without a secret cannot be pinged (the target would refuse
// the call): that is a failed result, not recorded.
func (p *Pinger) Ping(ctx context.Context, node store.ClusterNode) cluster.PingResult {
	if node.SecretKey == "" {
		return cluster.PingResult{Err: "no secret_key: complete the record first"}
	}
	start := time.Now()
	answer, err := p.call(ctx, node)
	res := cluster.PingResult{OK: err == nil, RTT: time.Since(start)}
	if ctx.Err() != nil {
		// Shutting down: the peer did nothing wrong.
		res.Err = ctx.Err().Error()
		return res
	}
	if err != nil {
		res.Err = err.Error()
		p.cfg.Log.Debug("cluster ping failed", "node_id", node.NodeID, "address", node.Address, "err", err)
	}
	// The outcome is written after the call ended, in a context of its
	// own: a shutdown during the write must not lose a result already had.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxTimeout)
	defer cancel()
	before := node.Status
	after, werr := p.store.RecordPingOutcome(wctx, node.ID, res.OK, time.Now().Unix(), p.cfg.MaxFailures)
	if werr != nil {
		p.cfg.Log.Warn("record cluster ping outcome", "node_id", node.NodeID, "err", werr)
		return res
	}
	if before != after.Status {
		p.cfg.Log.Info("cluster peer status changed", "node_id", node.NodeID, "address", node.Address,
			"status", after.Status, "ping_failures", after.PingFailures)
	}
	if res.OK {
		res.Learned = p.learn(wctx, answer.Nodes)
	}
	return res
}

// learn adds the listed nodes this node does not know.
func (p *Pinger) learn(ctx context.Context, listed []cluster.Listed) int {
	known, err := p.store.AllClusterNodes(ctx)
	if err != nil {
		p.cfg.Log.Warn("learn cluster nodes", "err", err)
		return 0
	}
	ids := make(map[int]bool, len(known))
	for _, n := range known {
		ids[n.NodeID] = true
	}
	added, err := p.store.LearnClusterNodes(ctx, cluster.Unknown(p.cfg.Self.NodeID, ids, listed))
	if err != nil {
		p.cfg.Log.Warn("learn cluster nodes", "err", err)
	}
	if added > 0 {
		p.cfg.Log.Info("learned cluster nodes from a peer's list; complete their secret_key to ping them", "added", added)
	}
	return added
}

// call sends this node's identity to node with node's secret, signed with
// this node's own, and reads the answer, bounded by MaxAnswerBytes. Only
// node's own secret goes to node (issue 11 §6). The body carries this
// node's current secret: signed with the one node stores (the previous
// during a rotation), it is how node learns the new one.
func (p *Pinger) call(ctx context.Context, node store.ClusterNode) (Answer, error) {
	self := p.cfg.Self
	var answer Answer
	err := p.caller.Call(ctx, peer.Target{Address: node.Address, Secret: node.SecretKey}, cluster.PingPath,
		Request{NodeID: self.NodeID, NodeName: self.Name, Address: self.Address, SecretKey: self.Secret}, MaxAnswerBytes, &answer)
	return answer, err
}
