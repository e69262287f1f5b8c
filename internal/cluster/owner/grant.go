package owner

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/store"
)

// GrantPath is the owner's endpoint of balance grants
// (docs/decisions/cluster-grants.md).
const GrantPath = "/api/cluster/grant"

// Outcomes of a grant call on the owner, the answer's data.
const (
	GrantOK         = "ok"
	GrantQuota      = "quota"             // the user's balance has less than the call's min
	GrantTokenQuota = "token_quota"       // the key has nothing left
	GrantTokenShort = "token_quota_short" // the key has less than the call's min
	GrantNotReady   = "not_ready"         // the grantee's earlier events are not all applied yet
)

// GrantAnswer is the owner's answer to a grant call: what it granted (a
// give-back: minus what it took back).
type GrantAnswer struct {
	Outcome string `json:"outcome"`
	Amount  int64  `json:"amount"`
}

// Grant sends op to the owner of op's balance, the user's or with TokenID
// the key's (billing.GrantSource): what the owner granted;
// store.ErrUserQuota, ErrTokenQuota, ErrTokenQuotaShort or
// ErrGrantNotReady for its refusals; ErrUnavailable when it could not be
// asked or did not answer; store.ErrGrantOwnerRemoved when root disabled
// the owner here.
func (r *Router) Grant(ctx context.Context, op store.GrantOp) (int64, error) {
	id := op.UserID
	if op.TokenID != 0 {
		id = op.TokenID
	}
	if r.Local(id) {
		return 0, fmt.Errorf("row %d is owned here: %w", id, store.ErrNotGrantOwner)
	}
	if n, err := r.nodes.ClusterNodeByNodeID(ctx, cluster.Owner(id)); err == nil && n.Disabled {
		return 0, fmt.Errorf("node %d: %w", n.NodeID, store.ErrGrantOwnerRemoved)
	}
	var ans GrantAnswer
	if err := r.Forward(ctx, id, GrantPath, op, &ans); err != nil {
		return 0, err
	}
	switch ans.Outcome {
	case GrantOK:
		return ans.Amount, nil
	case GrantQuota:
		return 0, store.ErrUserQuota
	case GrantTokenQuota:
		return 0, store.ErrTokenQuota
	case GrantTokenShort:
		return 0, store.ErrTokenQuotaShort
	case GrantNotReady:
		return 0, store.ErrGrantNotReady
	}
	return 0, fmt.Errorf("node %d answered grant outcome %q: %w", cluster.Owner(id), ans.Outcome, ErrUnavailable)
}

// GrantOutcome is the outcome the owner answers for err, a refusal of
// Store.Grant ("" for another error).
func GrantOutcome(err error) string {
	switch {
	case errors.Is(err, store.ErrUserQuota):
		return GrantQuota
	case errors.Is(err, store.ErrTokenQuotaShort):
		return GrantTokenShort
	case errors.Is(err, store.ErrTokenQuota):
		return GrantTokenQuota
	case errors.Is(err, store.ErrGrantNotReady):
		return GrantNotReady
	}
	return ""
}
