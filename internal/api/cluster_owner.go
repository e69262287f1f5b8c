package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of credits that belong to another node (docs/cluster.md,
// Credits: owner node).
const (
	// MsgRedeemOwnerDown and MsgOrderOwnerDown take the owner's node id.
	MsgRedeemOwnerDown   = "兑换码所属的集群节点 %d 暂时无法处理兑换,请稍后重试"
	MsgOrderOwnerDown    = "订单所属的集群节点 %d 暂时无法处理该操作,请稍后重试"
	MsgRedeemUserPending = "您的账户尚未同步到兑换码所属的集群节点,请稍后重试"
	MsgNotOwner          = "该兑换码或订单不属于本节点"
	MsgOwnerRequest      = "转发的请求无效"
)

// Outcomes of a forwarded redemption or activation: what the owner did,
// which the forwarding node turns into its caller's message.
const (
	outcomeOK           = "ok"
	outcomeInvalid      = "invalid"
	outcomeUsed         = "used"
	outcomeDisabled     = "disabled"
	outcomeBalanceLimit = "balance_limit"
	outcomeUserPending  = "user_pending"
	outcomeIdemMismatch = "idempotency_mismatch"
	outcomeUnknownOrder = "unknown_order"
	outcomeAmount       = "amount_mismatch"
	outcomeNotPending   = "not_pending"
)

// ownerRedeemRequest is the body of POST /api/cluster/redeem: redeem key
// for user user_id on the code's owner, once per idempotency key when one
// is given (the caller's Idempotency-Key, kept on the owner).
type ownerRedeemRequest struct {
	Key            string `json:"key"`
	UserID         int64  `json:"user_id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RequestHash    string `json:"request_hash,omitempty"`
}

type ownerRedeemAnswer struct {
	Outcome  string `json:"outcome"`
	Quota    int64  `json:"quota"`
	Replayed bool   `json:"replayed"`
}

// ownerActivateRequest is the body of POST /api/cluster/activate: the
// activation of order order_id as the forwarding node's route asked it.
type ownerActivateRequest struct {
	OrderID     int64  `json:"order_id"`
	Method      string `json:"method"`
	TradeNo     string `json:"trade_no"`
	AmountCents int64  `json:"amount_cents"`
	CheckAmount bool   `json:"check_amount"`
}

type ownerActivateAnswer struct {
	Outcome   string    `json:"outcome"`
	Activated bool      `json:"activated"`
	Order     orderView `json:"order"`
}

// redemptionRefusal is a redemption the store refused, as an outcome.
type redemptionRefusal string

func (r redemptionRefusal) Error() string { return "redemption refused: " + string(r) }

// redeemOutcome names the store's answer to a redemption (outcomeOK for
// err nil); an err that is not a refusal comes back as it is.
func redeemOutcome(code store.Redemption, err error) (string, error) {
	switch {
	case err == nil:
		return outcomeOK, nil
	case errors.Is(err, store.ErrNotFound):
		return outcomeInvalid, nil
	case errors.Is(err, store.ErrBalanceLimit):
		return outcomeBalanceLimit, nil
	case errors.Is(err, store.ErrConflict) && code.Status == redemption.StatusDisabled:
		return outcomeDisabled, nil
	case errors.Is(err, store.ErrConflict):
		return outcomeUsed, nil
	}
	return "", err
}

// outcomeError is the caller's message of a redemption outcome; nil for ok.
func outcomeError(outcome string) error {
	switch outcome {
	case outcomeOK:
		return nil
	case outcomeInvalid:
		return httpx.Fail(MsgRedeemKeyInvalid)
	case outcomeBalanceLimit:
		return httpx.Fail(MsgBalanceLimit)
	case outcomeDisabled:
		return httpx.Fail(MsgRedeemKeyDisabled)
	case outcomeUsed:
		return httpx.Fail(MsgRedeemKeyUsed)
	case outcomeUserPending:
		return httpx.Fail(MsgRedeemUserPending)
	case outcomeIdemMismatch:
		return httpx.Fail(MsgIdempotencyMismatch)
	case outcomeUnknownOrder:
		return payment.ErrUnknownOrder
	case outcomeAmount:
		return payment.ErrAmountMismatch
	case outcomeNotPending:
		return payment.ErrNotPending
	}
	return errors.New("owner answered an unknown outcome")
}

// clusterRedeem answers POST /api/cluster/redeem on the code's owner: the
// redemption a user asked on another node, run here as it runs for a
// local caller. The outcome is the answer's data; success false means the
// call itself was refused (secret, body, not this node's code).
func (s *Server) clusterRedeem(w http.ResponseWriter, r *http.Request) error {
	var req ownerRedeemRequest
	if err := httpx.DecodeLimit(w, r, &req, owner.MaxBodyBytes); err != nil {
		return err
	}
	if req.UserID <= 0 || len(req.IdempotencyKey) > maxIdempotencyKeyLength {
		return httpx.Fail(MsgOwnerRequest)
	}
	if !redemption.PlausibleKey(req.Key) {
		return httpx.OK(w, ownerRedeemAnswer{Outcome: outcomeInvalid})
	}
	ctx := r.Context()
	code, err := s.Store.RedemptionByCode(ctx, req.Key)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.OK(w, ownerRedeemAnswer{Outcome: outcomeInvalid})
	}
	if err != nil {
		return err
	}
	if !s.Cluster.Owner.Local(code.ID) {
		return httpx.Fail(MsgNotOwner)
	}
	u, err := s.Store.UserByID(ctx, req.UserID)
	if errors.Is(err, store.ErrNotFound) {
		// The user's row has not replicated here yet: nothing is done,
		// the caller may retry.
		return httpx.OK(w, ownerRedeemAnswer{Outcome: outcomeUserPending})
	}
	if err != nil {
		return err
	}
	logFor := redeemLog(u.ID, u.Username, u.Group)
	if req.IdempotencyKey == "" {
		row, err := s.Store.Redeem(ctx, req.Key, u.ID, logFor)
		outcome, err := redeemOutcome(row, err)
		if err != nil {
			return err
		}
		return httpx.OK(w, ownerRedeemAnswer{Outcome: outcome, Quota: row.Quota})
	}
	k := store.IdempotencyKey{CallerID: u.ID, Route: redeemRoute, Key: req.IdempotencyKey, RequestHash: req.RequestHash}
	ans, replayed, err := s.Store.RunIdempotent(ctx, k, func(tx *store.Tx) (store.Answer, error) {
		row, err := tx.Redeem(req.Key, u.ID, logFor)
		outcome, err := redeemOutcome(row, err)
		if err == nil && outcome != outcomeOK {
			err = redemptionRefusal(outcome)
		}
		return okAnswer("", row.Quota), err
	})
	var refusal redemptionRefusal
	switch {
	case errors.As(err, &refusal):
		return httpx.OK(w, ownerRedeemAnswer{Outcome: string(refusal)})
	case errors.Is(err, store.ErrIdempotencyMismatch):
		return httpx.OK(w, ownerRedeemAnswer{Outcome: outcomeIdemMismatch})
	case err != nil:
		return err
	}
	// The stored answer is the success envelope with the quota as data.
	var stored struct {
		Data int64 `json:"data"`
	}
	if err := json.Unmarshal(ans.Body, &stored); err != nil {
		return err
	}
	return httpx.OK(w, ownerRedeemAnswer{Outcome: outcomeOK, Quota: stored.Data, Replayed: replayed})
}

// forwardRedeem sends the caller's redemption of code (row id) to its
// owner and answers as a local redemption would: the credited quota or
// the same refusal messages.
func (s *Server) forwardRedeem(w http.ResponseWriter, r *http.Request, id int64, req ownerRedeemRequest) error {
	var ans ownerRedeemAnswer
	err := s.Cluster.Owner.Forward(r.Context(), id, owner.RedeemPath, req, &ans)
	if errors.Is(err, owner.ErrUnavailable) {
		s.Log.Warn("redemption not forwarded: owner unavailable", "redemption_id", id, "err", err)
		return httpx.Failf(MsgRedeemOwnerDown, cluster.Owner(id))
	}
	if err != nil {
		return err
	}
	if err := outcomeError(ans.Outcome); err != nil {
		return err
	}
	if ans.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return httpx.OK(w, ans.Quota)
}

// ownerDown is an activation whose owner could not be reached.
type ownerDown struct{ node int }

func (e ownerDown) Error() string { return "owner node unavailable" }

// activateOrder activates order id as a asks, on the order's owner: here
// when this node owns it (or cluster mode is off), else by forwarding. It
// answers the order as the owner has it after, and whether this call
// activated it; refusals are store.ActivateOrder's errors, an unreachable
// owner is ownerDown.
func (s *Server) activateOrder(ctx context.Context, id int64, a store.Activation) (orderView, bool, error) {
	if s.Cluster.Owner.Local(id) {
		// The inviter's reward is read here, where activation runs
		// (store.RewardInviter).
		a.InviterReward = s.Options.Current().Accounts.QuotaForInviter
		o, activated, err := s.Store.ActivateOrder(ctx, a)
		return viewOrder(&o), activated, err
	}
	req := ownerActivateRequest{OrderID: id, Method: a.Method, TradeNo: a.TradeNo, AmountCents: a.AmountCents, CheckAmount: a.CheckAmount}
	var ans ownerActivateAnswer
	err := s.Cluster.Owner.Forward(ctx, id, owner.ActivatePath, req, &ans)
	if errors.Is(err, owner.ErrUnavailable) {
		s.Log.Warn("order activation not forwarded: owner unavailable", "order_id", id, "err", err)
		return orderView{}, false, ownerDown{node: cluster.Owner(id)}
	}
	if err != nil {
		return orderView{}, false, err
	}
	return ans.Order, ans.Activated, outcomeError(ans.Outcome)
}

// clusterActivate answers POST /api/cluster/activate on the order's owner:
// store.ActivateOrder as the forwarding node's route asked it. Refusals
// are outcomes; success false means the call itself was refused.
func (s *Server) clusterActivate(w http.ResponseWriter, r *http.Request) error {
	var req ownerActivateRequest
	if err := httpx.DecodeLimit(w, r, &req, owner.MaxBodyBytes); err != nil {
		return err
	}
	if req.OrderID <= 0 || req.Method == "" || len(req.Method) > 32 || payTradeNoText.Validate(req.TradeNo) != "" {
		return httpx.Fail(MsgOwnerRequest)
	}
	if !s.Cluster.Owner.Local(req.OrderID) {
		return httpx.Fail(MsgNotOwner)
	}
	o, activated, err := s.Store.ActivateOrder(r.Context(), store.Activation{OrderID: req.OrderID, Method: req.Method,
		TradeNo: req.TradeNo, AmountCents: req.AmountCents, CheckAmount: req.CheckAmount, Now: time.Now().Unix(),
		InviterReward: s.Options.Current().Accounts.QuotaForInviter})
	ans := ownerActivateAnswer{Outcome: outcomeOK, Activated: activated, Order: viewOrder(&o)}
	switch {
	case errors.Is(err, payment.ErrUnknownOrder):
		ans.Outcome = outcomeUnknownOrder
	case errors.Is(err, payment.ErrAmountMismatch):
		ans.Outcome = outcomeAmount
	case errors.Is(err, payment.ErrNotPending):
		ans.Outcome = outcomeNotPending
	case err != nil:
		return err
	}
	return httpx.OK(w, ans)
}
