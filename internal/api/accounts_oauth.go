package api

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"unicode"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Messages of sign-in with providers (issue 31 §2).
const (
	MsgOAuthState         = "state 无效或已过期,请重新登录"
	MsgOAuthDisabled      = "管理员未开启通过该方式登录以及注册"
	MsgOAuthFailed        = "第三方登录失败,请稍后再试"
	MsgOAuthBoundToOther  = "该第三方账户已被其他用户绑定"
	MsgOAuthCodeMissing   = "缺少授权码 code"
	MsgOAuthProviderSetup = "第三方登录配置不完整,请联系管理员"
)

// oauthCookie carries the pending sign-in's state, and the nonce and PKCE
// verifier when the console started the flow, bound to this browser: the
// callback must bring the same state in its query.
const oauthCookie = "modelgate_oauth"

// oauthFlow is what the cookie holds.
type oauthFlow struct {
	State, Nonce, Verifier string
}

func (f oauthFlow) encode() string { return f.State + "." + f.Nonce + "." + f.Verifier }

func readFlow(r *http.Request) (oauthFlow, bool) {
	c, err := r.Cookie(oauthCookie)
	if err != nil {
		return oauthFlow{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || parts[0] == "" {
		return oauthFlow{}, false
	}
	return oauthFlow{State: parts[0], Nonce: parts[1], Verifier: parts[2]}, true
}

// setFlow stores f for ten minutes, only for the /api/oauth/ routes.
func setFlow(w http.ResponseWriter, r *http.Request, f oauthFlow) {
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: f.encode(), Path: "/api/oauth/", MaxAge: 600,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
}

func clearFlow(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: "", Path: "/api/oauth/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// oauthState serves GET /api/oauth/state: a new state, answered as data and
// kept in this browser's cookie, which the callback checks.
func (s *Server) oauthState(w http.ResponseWriter, r *http.Request) error {
	f := oauthFlow{State: rand.Text()}
	setFlow(w, r, f)
	return httpx.OK(w, f.State)
}

// takeFlow checks the callback's state against the cookie and ends the
// flow (a state works once).
func takeFlow(w http.ResponseWriter, r *http.Request) (oauthFlow, error) {
	f, ok := readFlow(r)
	if ok {
		// Any callback ends the flow, a refused one too: a state is
		// tried once.
		clearFlow(w)
	}
	state := r.URL.Query().Get("state")
	if !ok || state == "" || subtle.ConstantTimeCompare([]byte(state), []byte(f.State)) != 1 {
		return oauthFlow{}, httpx.Fail(MsgOAuthState)
	}
	if r.URL.Query().Get("code") == "" {
		return oauthFlow{}, httpx.Fail(MsgOAuthCodeMissing)
	}
	return f, nil
}

// identity is who a provider says signed in.
type identity struct {
	Provider string // store.ProviderOIDC, store.ProviderGitHub
	Subject  string
	// Username is the provider's preferred name (a hint).
	Username string
	// Email is set only when the provider vouches for it.
	Email string
}

// signInWith logs in the user bound to id, binds id to the logged-in
// caller, or creates a user when registration is open.
func (s *Server) signInWith(w http.ResponseWriter, r *http.Request, id identity) error {
	ctx := r.Context()
	me, _ := s.authenticate(r)
	if me != nil && me.Status != user.StatusEnabled {
		me = nil
	}
	bound, err := s.Store.UserByProvider(ctx, id.Provider, id.Subject)
	switch {
	case err == nil && me != nil && me.ID != bound.ID:
		return httpx.Fail(MsgOAuthBoundToOther)
	case err == nil:
		return s.logIn(w, r, bound)
	case !errors.Is(err, store.ErrNotFound):
		return err
	case me != nil:
		err := s.Store.BindProvider(ctx, me.ID, id.Provider, id.Subject)
		if errors.Is(err, store.ErrDuplicate) {
			return httpx.Fail(MsgOAuthBoundToOther)
		}
		if err != nil {
			return err
		}
		return httpx.OKMessage(w, "bind")
	}
	opts := s.Options.Current()
	if !opts.RegisterEnabled {
		return httpx.Fail(MsgRegisterClosed)
	}
	if id.Email != "" {
		if taken, err := s.Store.EmailTaken(ctx, id.Email); err != nil {
			return err
		} else if taken || !opts.Accounts.DomainAllowed(id.Email) {
			id.Email = ""
		}
	}
	subject := id.Subject
	for attempt := 0; attempt < 5; attempt++ {
		u := store.User{
			Username: providerUsername(id, attempt), Email: id.Email,
			Role: user.RoleUser, Status: user.StatusEnabled, Group: user.DefaultGroup, Quota: opts.NewUserQuota,
		}
		u.DisplayName = u.Username
		if id.Provider == store.ProviderOIDC {
			u.OidcID = &subject
		} else {
			u.GitHubID = &subject
		}
		// The password is random: the user signs in with the provider,
		// or sets one through a reset by mail.
		err := s.createAccount(r, &u, rand.Text())
		var fail *httpx.Error
		if errors.As(err, &fail) && fail.Message == MsgUsernameTaken {
			// Either the name was taken, or a parallel sign-in of the
			// same subject created its user first: then that one logs in.
			if winner, err := s.Store.UserByProvider(ctx, id.Provider, id.Subject); err == nil {
				return s.logIn(w, r, winner)
			}
			continue
		}
		if err != nil {
			return err
		}
		return s.logIn(w, r, u)
	}
	return httpx.Fail(MsgUsernameTaken)
}

// logIn issues the session of u, refused when u is disabled or deleted.
func (s *Server) logIn(w http.ResponseWriter, r *http.Request, u store.User) error {
	if u.Status != user.StatusEnabled {
		return httpx.Fail(MsgUserBanned)
	}
	s.Sessions.Issue(w, r, u.ID, u.SessionVersion)
	return httpx.OK(w, viewSelf(&u))
}

// providerUsername is the provider's preferred name made valid (spaces to
// underscores, at most 20 characters), with a random suffix after the
// first attempt; a name that cannot be made valid becomes provider_xxxx.
func providerUsername(id identity, attempt int) string {
	name := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(id.Username))
	prefix := "github"
	if id.Provider == store.ProviderOIDC {
		prefix = "oidc"
	}
	if user.ValidateUsername(clip(name, 20)) != "" {
		name, attempt = prefix, max(attempt, 1)
	}
	if attempt == 0 {
		return clip(name, 20)
	}
	return clip(name, 15) + "_" + strings.ToLower(rand.Text()[:4])
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
