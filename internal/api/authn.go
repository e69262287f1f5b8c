package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Authentication failures, exactly as the spec's table.
const (
	MsgNotLoggedIn  = "无权进行此操作,未登录且未提供 access token"
	MsgTokenInvalid = "无权进行此操作,access token 无效"
	MsgNoPermission = "无权进行此操作,权限不足"
	MsgUserBanned   = "用户已被封禁"
)

type callerKey struct{}

// caller returns the authenticated user of a request behind requireRole.
func caller(r *http.Request) *store.User {
	u, _ := r.Context().Value(callerKey{}).(*store.User)
	return u
}

// requireRole authenticates the request (spec: Authentication, schemes 1
// and 2) and checks the caller's role. The user row is read on every request,
// so a ban, a demotion or a password change takes effect at once.
func (s *Server) requireRole(lvl level, next func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if u.Status != user.StatusEnabled {
			return httpx.Fail(MsgUserBanned)
		}
		if level(u.Role) < lvl {
			return httpx.Fail(MsgNoPermission)
		}
		return next(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, u)))
	}
}

// authenticate finds the caller: a valid session cookie wins; otherwise the
// Authorization header (with or without "Bearer ") is the root access token
// or a user's access token.
func (s *Server) authenticate(r *http.Request) (*store.User, error) {
	ctx := r.Context()
	if sess, ok := s.Sessions.Read(r, time.Now()); ok {
		u, err := s.Store.UserByID(ctx, sess.UserID)
		switch {
		case err == nil && (u.SessionVersion == sess.Version || u.Status != user.StatusEnabled):
			// A banned user's ended session still says who it was, so the
			// answer is the spec's "banned", not "not logged in".
			return &u, nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		// A session ended by a password change or logout-everywhere falls
		// through to the header, like no session at all.
	}
	header := strings.TrimSpace(r.Header.Get("Authorization"))
	token := strings.TrimSpace(strings.TrimPrefix(header, "Bearer "))
	if token == "" {
		return nil, httpx.FailStatus(http.StatusUnauthorized, MsgNotLoggedIn)
	}
	if s.RootAccessToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.RootAccessToken)) == 1 {
		u, err := s.Store.RootUser(ctx)
		if err != nil {
			return nil, err
		}
		return &u, nil
	}
	if accessTokenText.Validate(token) != "" {
		return nil, httpx.Fail(MsgTokenInvalid) // no stored token looks like it
	}
	u, err := s.Store.UserByAccessToken(ctx, token)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpx.Fail(MsgTokenInvalid)
	}
	if err != nil {
		return nil, err
	}
	return &u, nil
}
