package owner

import (
	"context"
	"fmt"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/store"
)

// GrantPath is the owner's endpoint of balance grants
// (docs/decisions/cluster-grants.md).
const GrantPath = "/api/cluster/grant"

// Outcomes of a grant call on the owner, the answer's data.
const (
	GrantOK       = "ok"
	GrantQuota    = "quota"     // the balance has less than the call's min
	GrantNotReady = "not_ready" // the grantee's earlier events are not all applied yet
)

// GrantAnswer is the owner's answer to a grant call: what it granted (a
// give-back: minus what it took back).
type GrantAnswer struct {
	Outcome string `json:"outcome"`
	Amount  int64  `json:"amount"`
}

// Grant sends op to the owner of op's user (billing.GrantSource): what the
// owner granted, store.ErrUserQuota or store.ErrGrantNotReady for its
// refusals, ErrUnavailable when it could not be asked or did not answer,
// store.ErrGrantOwnerRemoved when root disabled the owner here.
func (r *Router) Grant(ctx context.Context, op store.GrantOp) (int64, error) {
	if r.Local(op.UserID) {
		return 0, fmt.Errorf("user %d is owned here: %w", op.UserID, store.ErrNotGrantOwner)
	}
	if n, err := r.nodes.ClusterNodeByNodeID(ctx, cluster.Owner(op.UserID)); err == nil && n.Disabled {
		return 0, fmt.Errorf("node %d: %w", n.NodeID, store.ErrGrantOwnerRemoved)
	}
	var ans GrantAnswer
	if err := r.Forward(ctx, op.UserID, GrantPath, op, &ans); err != nil {
		return 0, err
	}
	switch ans.Outcome {
	case GrantOK:
		return ans.Amount, nil
	case GrantQuota:
		return 0, store.ErrUserQuota
	case GrantNotReady:
		return 0, store.ErrGrantNotReady
	}
	return 0, fmt.Errorf("node %d answered grant outcome %q: %w", cluster.Owner(op.UserID), ans.Outcome, ErrUnavailable)
}
