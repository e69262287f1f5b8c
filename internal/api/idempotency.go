package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of idempotent requests.
const (
	MsgIdempotencyKeyInvalid = "Idempotency-Key 必须是 1 到 128 个可见 ASCII 字符"
	MsgIdempotencyMismatch   = "该 Idempotency-Key 已用于另一个请求,请为新请求使用新的 Idempotency-Key"
)

// maxIdempotencyKeyLength is the column's size.
const maxIdempotencyKeyLength = 128

// idempotencyKey reads the Idempotency-Key header (Stripe's convention): ""
// when absent. req, the decoded and normalised request, is hashed so a key
// reused for a different request is refused.
func idempotencyKey(r *http.Request, route string, req any) (store.IdempotencyKey, error) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return store.IdempotencyKey{}, nil
	}
	if len(key) > maxIdempotencyKeyLength || strings.IndexFunc(key, func(c rune) bool { return c < '!' || c > '~' }) >= 0 {
		return store.IdempotencyKey{}, httpx.Fail(MsgIdempotencyKeyInvalid)
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		return store.IdempotencyKey{}, err
	}
	sum := sha256.Sum256(canonical)
	return store.IdempotencyKey{CallerID: caller(r).ID, Route: route, Key: key, RequestHash: hex.EncodeToString(sum[:])}, nil
}

// okAnswer is the success envelope as httpx.OK and httpx.OKMessage write
// it, for storing with an idempotency key.
func okAnswer(msg string, data any) store.Answer {
	body, _ := json.Marshal(httpx.Envelope{Success: true, Message: msg, Data: data})
	return store.Answer{Status: http.StatusOK, Body: append(body, '\n')}
}

// runIdempotent runs credit once per key and writes its answer: the first
// time as credit made it, on a retry as it was stored, marked by the
// Idempotent-Replayed header.
func (s *Server) runIdempotent(w http.ResponseWriter, r *http.Request, k store.IdempotencyKey, credit func(tx *store.Tx) (store.Answer, error)) error {
	ans, replayed, err := s.Store.RunIdempotent(r.Context(), k, credit)
	if errors.Is(err, store.ErrIdempotencyMismatch) {
		return httpx.Fail(MsgIdempotencyMismatch)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(ans.Status)
	_, err = w.Write(ans.Body)
	return err
}
