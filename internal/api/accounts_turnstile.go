package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
)

// Messages of the Turnstile check.
const (
	MsgTurnstileMissing = "Turnstile token 为空"
	MsgTurnstileFailed  = "Turnstile 校验失败,请刷新重试!"
	MsgTurnstileDown    = "Turnstile 校验服务暂时不可用,请稍后再试"
)

// checkTurnstile requires a valid Turnstile token when TurnstileCheckEnabled
// is on: the query parameter turnstile (as one-api sends it), else
// bodyToken (a POST's turnstile field). siteverify decides; an unreachable
// siteverify refuses (fail closed: the check exists to stop bots).
func (s *Server) checkTurnstile(r *http.Request, bodyToken string) error {
	opts := s.Options.Current().Accounts
	if !opts.Turnstile {
		return nil
	}
	token := r.URL.Query().Get("turnstile")
	if token == "" {
		token = bodyToken
	}
	if token == "" {
		return httpx.Fail(MsgTurnstileMissing)
	}
	ok, err := s.Turnstile.Verify(r.Context(), opts.TurnstileSecretKey, token, clientIP(r))
	if err != nil {
		s.Log.Error("turnstile siteverify failed", "err", err)
		return httpx.FailStatus(http.StatusServiceUnavailable, MsgTurnstileDown)
	}
	if !ok {
		return httpx.Fail(MsgTurnstileFailed)
	}
	return nil
}
