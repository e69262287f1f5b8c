package api

import (
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/httpx"
)

// Messages of absolute balance edits of rows another node owns
// (docs/cluster.md, Credits: owner node).
const (
	// MsgUserQuotaOwnerDown and MsgTokenQuotaOwnerDown take the owner's
	// node id.
	MsgUserQuotaOwnerDown  = "用户所属的集群节点 %d 暂时无法修改额度,请稍后重试"
	MsgTokenQuotaOwnerDown = "令牌所属的集群节点 %d 暂时无法修改额度,请稍后重试"
	MsgBalanceNotOwner     = "该用户或令牌不属于本节点"
)

// clusterSetQuota answers POST /api/cluster/set_quota on the row's owner:
// an admin's quota edit or a key's remain_quota another node forwarded,
// applied here under the row lock (owner.Balances.Apply). The outcome is
// the answer's data; success false means the call itself was refused
// (secret, body, not this node's row).
func (s *Server) clusterSetQuota(w http.ResponseWriter, r *http.Request) error {
	var req owner.QuotaEdit
	if err := httpx.DecodeLimit(w, r, &req, owner.MaxBodyBytes); err != nil {
		return err
	}
	ans, err := s.Balances.Apply(r.Context(), req)
	switch {
	case errors.Is(err, owner.ErrBadEdit):
		return httpx.Fail(MsgOwnerRequest)
	case errors.Is(err, owner.ErrNotOwner):
		s.Log.Warn("cluster set quota refused: not this node's row", "table", req.Table, "id", req.ID, "remote", r.RemoteAddr)
		return httpx.Fail(MsgBalanceNotOwner)
	case err != nil:
		return err
	}
	return httpx.OK(w, ans)
}
