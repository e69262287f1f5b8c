package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the redemption endpoints.
// MsgRedeemCreatorRank refuses a code its creator (an admin) could not
// have credited to the redeemer: its own, or another admin's.
const MsgRedeemCreatorRank = "不能兑换自己或同级、更高权限的管理员创建的兑换码"

const (
	MsgRedemptionNotFound   = "兑换码不存在"
	MsgRedemptionUsedStatus = "该兑换码已被使用,不能修改状态"
	MsgRedemptionUsedQuota  = "该兑换码已被使用,不能修改额度"
	MsgRedeemKeyEmpty       = "兑换码不能为空"
	MsgRedeemKeyInvalid     = "无效的兑换码"
	MsgRedeemKeyDisabled    = "该兑换码已被禁用"
	MsgRedeemKeyUsed        = "该兑换码已被使用"
)

// redemptionView is a code as admins see it. The key is shown in clear:
// admins hand codes out.
type redemptionView struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Key          string `json:"key"`
	Status       int    `json:"status"`
	Quota        int64  `json:"quota"`
	CreatedTime  int64  `json:"created_time"`
	RedeemedTime int64  `json:"redeemed_time"`
	UsedUserID   int64  `json:"used_user_id"`
	CreatorID    int64  `json:"creator_id"`
}

func viewRedemption(r *store.Redemption) redemptionView {
	return redemptionView{
		ID: r.ID, Name: r.Name, Key: r.Code, Status: r.Status, Quota: r.Quota,
		CreatedTime: r.CreatedTime, RedeemedTime: r.RedeemedTime, UsedUserID: r.UsedUserID, CreatorID: r.CreatorID,
	}
}

func (s *Server) listRedemptions(w http.ResponseWriter, r *http.Request) error {
	return s.writeRedemptions(w, r, "")
}

func (s *Server) searchRedemptions(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeRedemptions(w, r, keyword)
}

func (s *Server) writeRedemptions(w http.ResponseWriter, r *http.Request, keyword string) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListRedemptions(r.Context(), keyword, pg)
	if err != nil {
		return err
	}
	views := make([]redemptionView, len(rows))
	for i := range rows {
		views[i] = viewRedemption(&rows[i])
	}
	return httpx.OKList(w, views, total)
}

func (s *Server) getRedemption(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	row, err := s.Store.RedemptionByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgRedemptionNotFound)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewRedemption(&row))
}

type createRedemptionsRequest struct {
	Name  string `json:"name"`
	Quota int64  `json:"quota"`
	Count *int   `json:"count"` // nil: one code
}

// createRedemptions creates count codes in one transaction and returns
// their keys, the only time an admin needs to copy them in bulk.
func (s *Server) createRedemptions(w http.ResponseWriter, r *http.Request) error {
	var req createRedemptionsRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Name = strings.TrimSpace(req.Name)
	count := redemption.DefaultCount
	if req.Count != nil {
		count = *req.Count
	}
	msg := firstProblem(redemption.ValidateName(req.Name), redemption.ValidateQuota(req.Quota), redemption.ValidateCount(count))
	if msg != "" {
		return httpx.Fail(msg)
	}
	rows := make([]store.Redemption, count)
	keys := make([]string, count)
	for i := range rows {
		keys[i] = redemption.NewKey()
		rows[i] = store.Redemption{
			Name: req.Name, Code: keys[i], Quota: req.Quota,
			Status: redemption.StatusUnused, CreatorID: caller(r).ID,
		}
	}
	if err := s.Store.CreateRedemptions(r.Context(), rows); err != nil {
		return err
	}
	return httpx.OK(w, keys)
}

type updateRedemptionRequest struct {
	ID     int64   `json:"id"`
	Name   *string `json:"name"`
	Quota  *int64  `json:"quota"`
	Status *int    `json:"status"`
}

// updateRedemption changes the name and quota of a code or, with
// ?status_only=1, only its status (enable or disable). A used code keeps
// its status and quota.
func (s *Server) updateRedemption(w http.ResponseWriter, r *http.Request) error {
	statusOnly, err := httpx.QueryInt(r, "status_only", 0)
	if err != nil {
		return err
	}
	var req updateRedemptionRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	patch, err := redemptionPatch(&req, statusOnly != 0)
	if err != nil {
		return err
	}
	row, err := s.Store.UpdateRedemption(r.Context(), req.ID, patch)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgRedemptionNotFound)
	case errors.Is(err, store.ErrConflict) && patch.Status != nil:
		return httpx.Fail(MsgRedemptionUsedStatus)
	case errors.Is(err, store.ErrConflict):
		return httpx.Fail(MsgRedemptionUsedQuota)
	case err != nil:
		return err
	}
	return httpx.OK(w, viewRedemption(&row))
}

// redemptionPatch validates an update. status_only takes only the status
// (required); otherwise only name and quota are read and a status in the
// body is ignored.
func redemptionPatch(req *updateRedemptionRequest, statusOnly bool) (store.RedemptionPatch, error) {
	if statusOnly {
		if req.Status == nil {
			return store.RedemptionPatch{}, httpx.Fail(redemption.MsgStatusInvalid)
		}
		if msg := redemption.ValidateSettableStatus(*req.Status); msg != "" {
			return store.RedemptionPatch{}, httpx.Fail(msg)
		}
		return store.RedemptionPatch{Status: req.Status}, nil
	}
	p := store.RedemptionPatch{Quota: req.Quota}
	var problems []string
	if req.Name != nil {
		name := strings.TrimSpace(*req.Name)
		p.Name = &name
		problems = append(problems, redemption.ValidateName(name))
	}
	if req.Quota != nil {
		problems = append(problems, redemption.ValidateQuota(*req.Quota))
	}
	if msg := firstProblem(problems...); msg != "" {
		return p, httpx.Fail(msg)
	}
	return p, nil
}

// deleteRedemption removes a code for good, even a used one: its top-up log
// keeps the history.
func (s *Server) deleteRedemption(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteRedemption, MsgRedemptionNotFound)
}

type redeemRequest struct {
	Key string `json:"key"`
}

// redeemRoute names the redemption route in idempotency keys.
const redeemRoute = "POST /api/user/topup"

// redeemCode credits a code to the caller's balance; data is the credited
// quota. The store makes it one transaction, so a code credits once however
// many requests race for it. With an Idempotency-Key header a retry gets the
// first answer (the credited quota) instead of "already used". In cluster
// mode a code another node owns is redeemed there (forwardRedeem), so it
// credits once cluster-wide.
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request) error {
	var req redeemRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Key = redemption.NormalizeKey(req.Key)
	if req.Key == "" {
		return httpx.Fail(MsgRedeemKeyEmpty)
	}
	if !redemption.PlausibleKey(req.Key) {
		return httpx.Fail(MsgRedeemKeyInvalid)
	}
	ik, err := idempotencyKey(r, redeemRoute, req)
	if err != nil {
		return err
	}
	me := caller(r)
	if s.Cluster.Owner != nil {
		code, err := s.Store.RedemptionByCode(r.Context(), req.Key)
		if errors.Is(err, store.ErrNotFound) {
			return httpx.Fail(MsgRedeemKeyInvalid)
		}
		if err != nil {
			return err
		}
		if !s.Cluster.Owner.Local(code.ID) {
			return s.forwardRedeem(w, r, code.ID, ownerRedeemRequest{Key: req.Key, UserID: me.ID,
				IdempotencyKey: ik.Key, RequestHash: ik.RequestHash})
		}
	}
	logFor := redeemLog(me.ID, me.Username, me.Group)
	if ik.Key != "" {
		return s.runIdempotent(w, r, ik, func(tx *store.Tx) (store.Answer, error) {
			code, err := tx.Redeem(req.Key, me.ID, logFor)
			return okAnswer("", code.Quota), redeemError(code, err)
		})
	}
	code, err := s.Store.Redeem(r.Context(), req.Key, me.ID, logFor)
	if err := redeemError(code, err); err != nil {
		return err
	}
	return httpx.OK(w, code.Quota)
}

// redeemLog builds the top-up log of a redemption by the user.
func redeemLog(userID int64, username, group string) func(store.Redemption) store.Log {
	return func(code store.Redemption) store.Log {
		return store.Log{
			UserID: userID, Username: username, Group: group, Type: store.LogTopup, Quota: code.Quota,
			Content: fmt.Sprintf(logtext.Redeem, code.Quota, code.ID),
		}
	}
}

// redeemError turns the store's refusal of a redemption into the client's
// message; nil stays nil.
func redeemError(code store.Redemption, err error) error {
	outcome, err := redeemOutcome(code, err)
	if err != nil {
		return err
	}
	return outcomeError(outcome)
}
