// Package owner sends the credits of redemption codes and orders, and
// absolute balance edits of users and keys, to the node that owns the row
// (cluster.Owner: the node that created it), so a code or an order credits
// once and two edits of one balance apply at most once cluster-wide
// (docs/cluster.md, Credits: owner node). The Router decides whether a row
// is this node's to change and, when not, calls the owner's internal
// endpoint; Balances is the use-case of a balance edit, here or on the
// owner. The endpoints themselves are in api, the credits in store.
package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/store"
)

// Internal endpoints of the owner, opened by its CLUSTER_SECRET.
const (
	RedeemPath   = "/api/cluster/redeem"
	ActivatePath = "/api/cluster/activate"
	SecretHeader = peer.SecretHeader
)

// MaxBodyBytes bounds a forwarded request and its answer, both ways: the
// bodies are a few fields and one order view.
const MaxBodyBytes = 64 << 10

// Timeout bounds one forwarded call, as a ping: a credit is one short
// transaction on the owner.
const Timeout = 5 * time.Second

// ErrUnavailable is a forward that could not be made or whose answer did
// not come: the owner is not in the node table, is disabled, has no
// secret, or did not answer in time or as expected. The caller answers a
// retryable failure; when the call was sent, the owner may have applied it
// (a retry then meets the code used or the order paid).
var ErrUnavailable = errors.New("owner node unavailable")

// Nodes reads the node table.
type Nodes interface {
	ClusterNodeByNodeID(ctx context.Context, nodeID int) (store.ClusterNode, error)
}

// Router decides where a code or an order is changed. A nil *Router is
// cluster mode off: every row is local.
type Router struct {
	self   int
	nodes  Nodes
	caller peer.Caller
}

// New returns the router of node self (its id and the secrets its calls
// are signed with) over the node table nodes.
func New(self peer.Self, nodes Nodes) *Router {
	return &Router{self: self.NodeID, nodes: nodes, caller: peer.Caller{Client: peer.NewClient(Timeout), Self: self}}
}

// Self is this node's id (0 when r is nil: cluster mode off).
func (r *Router) Self() int {
	if r == nil {
		return 0
	}
	return r.self
}

// Local reports whether this node may change row id itself: always with
// cluster mode off, else only on the row's owner.
func (r *Router) Local(id int64) bool {
	return r == nil || cluster.Owner(id) == r.self
}

// Forward sends req to the owner of row id at path and decodes the data of
// its success answer into out. A refusal of the owner (success false: a
// wrong secret, a misrouted row) and every failure to reach it are
// ErrUnavailable, wrapped with the owner's node id.
func (r *Router) Forward(ctx context.Context, id int64, path string, req, out any) error {
	nodeID := cluster.Owner(id)
	node, err := r.nodes.ClusterNodeByNodeID(ctx, nodeID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("node %d is not in the node table: %w", nodeID, ErrUnavailable)
	case err != nil:
		return err
	case node.Disabled:
		return fmt.Errorf("node %d is disabled: %w", nodeID, ErrUnavailable)
	case node.SecretKey == "":
		return fmt.Errorf("node %d has no secret_key: %w", nodeID, ErrUnavailable)
	}
	if err := r.call(ctx, node, path, req, out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("node %d at %s: %v: %w", nodeID, node.Address, err, ErrUnavailable)
	}
	return nil
}

func (r *Router) call(ctx context.Context, node store.ClusterNode, path string, body, out any) error {
	return r.caller.Call(ctx, peer.Target{Address: node.Address, Secret: node.SecretKey}, path, body, MaxBodyBytes, out)
}
