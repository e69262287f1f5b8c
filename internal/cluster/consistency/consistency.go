// Package consistency compares this node's replicated data with its peers'
// (docs/cluster.md, Consistency check): it asks each peer for its digest
// (POST /api/cluster/digest: per table a row count and an order-free hash
// of the replicated columns, and the positions the data holds), computes
// its own, and lists the tables that differ. Two digests are compared only
// when both nodes hold the same positions (every origin's events applied
// as far on both): otherwise the nodes are still catching up, which is not
// a difference, and the check asks again a little later.
package consistency

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

// DigestPath is the peer's internal digest endpoint, opened by its
// CLUSTER_SECRET.
const DigestPath = "/api/cluster/digest"

// Timeout bounds one digest call: a peer reads every replicated row, about
// a second per million logs on SQLite (docs/performance.md).
const Timeout = 2 * time.Minute

// maxAnswerBytes bounds a digest answer: a dozen tables and positions.
const maxAnswerBytes = 1 << 20

// Store is what the check reads here.
type Store interface {
	Digest(ctx context.Context) (replica.Digest, error)
	AllClusterNodes(ctx context.Context) ([]store.ClusterNode, error)
}

// Checker compares this node with its peers. Attempts and Wait are the
// rounds it makes while a peer has not caught up (positions differ), and
// the pause between them; their zero values are 3 rounds, 1 s apart.
type Checker struct {
	Store Store
	// Self is this node, which signs its calls.
	Self     peer.Self
	Attempts int
	Wait     time.Duration
	Client   *http.Client
}

// Table is one table compared with one peer.
type Table struct {
	Table    string `json:"table"`
	RowsHere int64  `json:"rows_here"`
	RowsPeer int64  `json:"rows_peer"`
	HashHere string `json:"hash_here"`
	HashPeer string `json:"hash_peer"`
	Equal    bool   `json:"equal"`
}

// Peer is the comparison with one peer. OK false: the peer's digest could
// not be had (Error says why; no secret in it). CaughtUp false: the two
// nodes still held different positions after the last round, so a
// differing table may only be in flight.
type Peer struct {
	NodeID        int              `json:"node_id"`
	OK            bool             `json:"ok"`
	Error         string           `json:"error,omitempty"`
	CaughtUp      bool             `json:"caught_up"`
	PositionsHere map[string]int64 `json:"positions_here"`
	PositionsPeer map[string]int64 `json:"positions_peer"`
	Tables        []Table          `json:"tables"`
	Differing     []string         `json:"differing"`
}

// Report is the whole check: Consistent when every peer answered, caught
// up, and no table differs.
type Report struct {
	NodeID     int    `json:"node_id"`
	Consistent bool   `json:"consistent"`
	Peers      []Peer `json:"peers"`
}

// Check compares this node with every enabled peer that has a secret.
func (c *Checker) Check(ctx context.Context) (Report, error) {
	nodes, err := c.Store.AllClusterNodes(ctx)
	if err != nil {
		return Report{}, err
	}
	var pending []store.ClusterNode
	for _, n := range nodes {
		if !n.Disabled && strings.TrimSpace(n.SecretKey) != "" && n.NodeID != c.Self.NodeID {
			pending = append(pending, n)
		}
	}
	attempts, wait := max(c.Attempts, 1), c.Wait
	if c.Attempts == 0 {
		attempts = 3
	}
	if wait == 0 {
		wait = time.Second
	}
	caller := peer.Caller{Client: c.Client, Self: c.Self}
	if caller.Client == nil {
		caller.Client = peer.NewClient(Timeout)
	}
	results := make(map[int]Peer, len(pending))
	for round := 0; round < attempts && len(pending) > 0; round++ {
		if round > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Report{}, ctx.Err()
			}
		}
		here, err := c.Store.Digest(ctx)
		if err != nil {
			return Report{}, err
		}
		peers := make([]Peer, len(pending))
		var wg sync.WaitGroup
		for i, n := range pending {
			wg.Add(1)
			go func() {
				defer wg.Done()
				peers[i] = compareWith(ctx, caller, n, here)
			}()
		}
		wg.Wait()
		var again []store.ClusterNode
		for i, p := range peers {
			results[p.NodeID] = p
			if p.OK && !p.CaughtUp {
				again = append(again, pending[i])
			}
		}
		pending = again
	}
	rep := Report{NodeID: c.Self.NodeID, Consistent: true, Peers: []Peer{}}
	for _, n := range nodes {
		p, ok := results[n.NodeID]
		if !ok {
			continue
		}
		rep.Peers = append(rep.Peers, p)
		if !p.OK || !p.CaughtUp || len(p.Differing) > 0 {
			rep.Consistent = false
		}
	}
	return rep, nil
}

// compareWith asks n for its digest and compares it with here.
func compareWith(ctx context.Context, caller peer.Caller, n store.ClusterNode, here replica.Digest) Peer {
	p := Peer{NodeID: n.NodeID, PositionsHere: here.Positions, Tables: []Table{}, Differing: []string{}}
	var there replica.Digest
	if err := caller.Call(ctx, peer.Target{Address: n.Address, Secret: n.SecretKey}, DigestPath, struct{}{}, maxAnswerBytes, &there); err != nil {
		p.Error = "digest from " + n.Address + ": " + err.Error()
		return p
	}
	p.OK, p.PositionsPeer = true, there.Positions
	p.CaughtUp = samePositions(here.Positions, there.Positions)
	p.Tables, p.Differing = compareTables(here.Tables, there.Tables)
	return p
}

// compareTables pairs the tables both digests hold (a table one node does
// not replicate, logs with CLUSTER_SYNC_LOGS=false, is not compared).
func compareTables(here, there []replica.TableDigest) ([]Table, []string) {
	peerTables := make(map[string]replica.TableDigest, len(there))
	for _, t := range there {
		peerTables[t.Table] = t
	}
	tables, differing := []Table{}, []string{}
	for _, h := range here {
		t, ok := peerTables[h.Table]
		if !ok {
			continue
		}
		eq := h.Rows == t.Rows && h.Hash == t.Hash
		tables = append(tables, Table{Table: h.Table, RowsHere: h.Rows, RowsPeer: t.Rows, HashHere: h.Hash, HashPeer: t.Hash, Equal: eq})
		if !eq {
			differing = append(differing, h.Table)
		}
	}
	return tables, differing
}

// samePositions reports whether both nodes hold every origin's events as
// far (an origin missing on one side is at 0 there).
func samePositions(a, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
