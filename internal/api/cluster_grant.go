package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of grants (docs/decisions/cluster-grants.md).
const (
	// MsgReleaseEnabled refuses to release the grants of a node still
	// enabled.
	MsgReleaseEnabled = "请先停用该节点(DELETE /api/cluster_node/{id}),再释放授予它的额度"
	// MsgTokenQuotaGranted refuses a key's remain_quota below what other
	// nodes hold of it.
	MsgTokenQuotaGranted = "该令牌的部分额度正由其他集群节点使用,暂时不能调低到该值,请稍后重试"
)

// Granter applies a grantee node's grant call on the user's owner, and
// root's release of a gone node's grants (billing.Ledger).
type Granter interface {
	GrantTo(ctx context.Context, op store.GrantOp) (int64, error)
	ReleaseGrants(ctx context.Context, node int) (users int, amount int64, err error)
}

// clusterGrant answers POST /api/cluster/grant on a user's owner node: a
// grant of part of the user's balance to the calling node, or a give-back
// (docs/decisions/cluster-grants.md). The outcome is the answer's data;
// success false means the call itself was refused (secret, signature, a
// node_id other than the signing sender, body, not this node's user).
func (s *Server) clusterGrant(w http.ResponseWriter, r *http.Request) error {
	var op store.GrantOp
	if err := httpx.DecodeLimit(w, r, &op, owner.MaxBodyBytes); err != nil {
		return err
	}
	if op.NodeID != senderOf(r).NodeID {
		// A grant is for the node that asks: one node cannot take or give
		// back another's grant.
		return s.refusePeer(r, refusedSourceMismatch)
	}
	if s.Grants == nil || op.UserID <= 0 || op.TokenID < 0 || op.NodeID <= 0 || op.NodeID >= cluster.IDStride || op.Key == "" || len(op.Key) > 64 || op.Boot == "" || op.Min < 0 {
		return httpx.Fail(MsgOwnerRequest)
	}
	got, err := s.Grants.GrantTo(r.Context(), op)
	switch outcome := owner.GrantOutcome(err); {
	case errors.Is(err, store.ErrNotGrantOwner):
		s.Log.Warn("cluster grant refused: not this node's row", "user_id", op.UserID, "token_id", op.TokenID,
			"node_id", op.NodeID, "remote", r.RemoteAddr)
		return httpx.Fail(MsgBalanceNotOwner)
	case outcome != "":
		return httpx.OK(w, owner.GrantAnswer{Outcome: outcome})
	case err != nil:
		return err
	}
	return httpx.OK(w, owner.GrantAnswer{Outcome: owner.GrantOK, Amount: got})
}

// releaseView is the answer of a release: the users whose grants were
// dropped and the amount that came back to their balances.
type releaseView struct {
	Users  int   `json:"users"`
	Amount int64 `json:"amount"`
}

// releaseNodeGrants answers POST /api/cluster_node/{id}/release_grants:
// root drops every grant this node gave a node gone for good, which must
// be disabled first (docs/decisions/cluster-grants.md).
func (s *Server) releaseNodeGrants(w http.ResponseWriter, r *http.Request) error {
	n, err := s.clusterNode(r)
	if err != nil {
		return err
	}
	if !n.Disabled {
		return httpx.Fail(MsgReleaseEnabled)
	}
	if s.Grants == nil {
		return httpx.OK(w, releaseView{})
	}
	users, amount, err := s.Grants.ReleaseGrants(r.Context(), n.NodeID)
	if err != nil {
		return err
	}
	s.Log.Warn("cluster grants released by root", "node_id", n.NodeID, "users", users, "amount", amount)
	return httpx.OK(w, releaseView{Users: users, Amount: amount})
}
