package api

import (
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the dead-letter endpoints.
const (
	MsgDeadLetterNotFound  = "该结算记录不存在"
	MsgDeadLetterReplayErr = "重放结算失败: "
)

// deadLetterView is a parked settlement as admins see it: the figures, the
// last error and what identifies the call (from its consume log).
type deadLetterView struct {
	ID        int64  `json:"id"`
	UserID    int64  `json:"user_id"`
	TokenID   int64  `json:"token_id"`
	ChannelID int64  `json:"channel_id"`
	Held      int64  `json:"held"`
	Cost      int64  `json:"cost"`
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	RequestID string `json:"request_id"`
	ModelName string `json:"model_name"`
	Username  string `json:"username"`
	SettleKey string `json:"settle_key"` // makes a replay idempotent
}

func viewDeadLetter(d *store.DeadLetter) deadLetterView {
	v := deadLetterView{ID: d.ID, UserID: d.UserID, TokenID: d.TokenID, ChannelID: d.ChannelID,
		Held: d.Held, Cost: d.Cost, Attempts: d.Attempts, Error: d.Error, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, SettleKey: d.SettleKey}
	// A settlement that cannot be decoded is still listed with its figures;
	// its replay reports the decoding error.
	if op, err := d.SettleOp(); err == nil && op.Log != nil {
		v.RequestID, v.ModelName, v.Username = op.Log.RequestID, op.Log.ModelName, op.Log.Username
	}
	return v
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListDeadLetters(r.Context(), pg)
	if err != nil {
		return err
	}
	views := make([]deadLetterView, len(rows))
	for i := range rows {
		views[i] = viewDeadLetter(&rows[i])
	}
	return httpx.OKList(w, views, total)
}

// replayDeadLetter applies a parked settlement again. It is idempotent: a
// settlement that had in fact committed charges nothing more.
func (s *Server) replayDeadLetter(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	err = s.Store.ReplayDeadLetter(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgDeadLetterNotFound)
	case err != nil:
		s.Log.Warn("dead letter replay failed", "dead_letter", id, "err", err)
		return httpx.Fail(MsgDeadLetterReplayErr + err.Error())
	}
	s.Log.Info("dead letter replayed", "dead_letter", id)
	return httpx.OKMessage(w, "")
}
