package api

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Messages of the user endpoints.
const (
	MsgRegisterClosed   = "管理员关闭了新用户注册"
	MsgUsernameTaken    = "用户名已存在"
	MsgLoginFailed      = "用户名或密码错误,或用户已被封禁"
	MsgUserNotFound     = "用户不存在"
	MsgRootCannotDelete = "不能删除超级管理员账户"
	MsgLoggedOut        = "已退出登录"
)

// userView is a user as shown to admins: never the password hash, the
// session version or the access token.
type userView struct {
	ID           int64  `json:"id"`
	Username     string `json:"username"`
	DisplayName  string `json:"display_name"`
	Role         int    `json:"role"`
	Status       int    `json:"status"`
	Email        string `json:"email"`
	Quota        int64  `json:"quota"`
	UsedQuota    int64  `json:"used_quota"`
	RequestCount int64  `json:"request_count"`
	Group        string `json:"group"`
	AffCode      string `json:"aff_code"`
	CreatedAt    int64  `json:"created_at"`
}

func viewUser(u *store.User) userView {
	return userView{
		ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Role: u.Role, Status: u.Status,
		Email: u.Email, Quota: u.Quota, UsedQuota: u.UsedQuota, RequestCount: u.RequestCount,
		Group: u.Group, AffCode: u.AffCode, CreatedAt: u.CreatedAt,
	}
}

// selfView is the caller's own account: the admin view plus its own access
// token (login data and self read, spec: Users).
type selfView struct {
	userView
	AccessToken string `json:"access_token"`
}

func viewSelf(u *store.User) selfView {
	v := selfView{userView: viewUser(u)}
	if u.AccessToken != nil {
		v.AccessToken = *u.AccessToken
	}
	return v
}

type registerRequest struct {
	Username         string `json:"username"`
	Password         string `json:"password"`
	Email            string `json:"email"`
	VerificationCode string `json:"verification_code"`
	// AffCode is the inviter's affiliate code (also ?aff= on the query).
	AffCode string `json:"aff_code"`
	// Turnstile is the captcha token when it is not on the query.
	Turnstile string `json:"turnstile"`
}

// register creates a user with a password. With EmailVerificationEnabled
// the email and its mailed code are required, and the code is used in the
// transaction that creates the user (accounts_email.go).
func (s *Server) register(w http.ResponseWriter, r *http.Request) error {
	opts := s.Options.Current()
	if !opts.RegisterEnabled {
		return httpx.Fail(MsgRegisterClosed)
	}
	if !opts.Accounts.PasswordRegister {
		return httpx.Fail(MsgPasswordRegisterOff)
	}
	var req registerRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Username = strings.TrimSpace(req.Username)
	req.Email = user.NormalizeEmail(req.Email)
	if err := s.limited(r, "register", limitRegisterPerIP, req.Email, limitCodePerEmail); err != nil {
		return err
	}
	if err := s.checkTurnstile(r, req.Turnstile); err != nil {
		return err
	}
	if msg := firstProblem(user.ValidateUsername(req.Username), passwordProblem(req.Password), user.ValidateEmail(req.Email)); msg != "" {
		return httpx.Fail(msg)
	}
	verify := opts.Accounts.EmailVerification
	if verify && (req.Email == "" || strings.TrimSpace(req.VerificationCode) == "") {
		return httpx.Fail(MsgCodeRequired)
	}
	if req.Email != "" {
		if _, err := checkEmail(opts, req.Email); err != nil {
			return err
		}
		if taken, err := s.Store.EmailTaken(r.Context(), req.Email); err != nil {
			return err
		} else if taken {
			return httpx.Fail(MsgEmailTaken)
		}
	}
	u := store.User{
		Username: req.Username, DisplayName: req.Username, Email: req.Email,
		Role: user.RoleUser, Status: user.StatusEnabled, Group: user.DefaultGroup,
		Quota: opts.NewUserQuota,
	}
	acct := store.NewAccount{User: &u}
	if verify {
		acct.CodeEmail, acct.CodeHash, acct.CodeNow = req.Email, user.HashCode(strings.TrimSpace(req.VerificationCode)), s.now().Unix()
	}
	// An inviter's code (body aff_code, or ?aff= of the console's link):
	// an unknown one is ignored, as one-api does, so a stale link still
	// registers.
	aff := strings.TrimSpace(req.AffCode)
	if aff == "" {
		aff = strings.TrimSpace(r.URL.Query().Get("aff"))
	}
	// Codes are short base32 text (newAffCode); anything else (NUL bytes,
	// invalid UTF-8) is no code and never reaches the database.
	if aff != "" && len(aff) <= 32 && isAlnum(aff) {
		inviter, err := s.Store.UserByAffCode(r.Context(), aff)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && inviter.Status == user.StatusEnabled {
			u.InviterID = inviter.ID
			acct.InviteeBonus = opts.Accounts.QuotaForInvitee
		}
	}
	err := s.createAccountWith(r, &u, req.Password, func(ctx context.Context, _ *store.User) error {
		return s.Store.CreateAccount(ctx, acct)
	})
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgCodeInvalid)
	}
	if err != nil {
		return err
	}
	return httpx.OK(w, viewUser(&u))
}

// createAccount hashes the password, gives the user an affiliate code and
// inserts it; a taken username is a client error.
func (s *Server) createAccount(r *http.Request, u *store.User, password string) error {
	return s.createAccountWith(r, u, password, s.Store.CreateUser)
}

// createAccountWith is createAccount inserting with create.
func (s *Server) createAccountWith(r *http.Request, u *store.User, password string, create func(context.Context, *store.User) error) error {
	hash, err := s.hashPassword(password)
	if err != nil {
		return err
	}
	u.PasswordHash = hash
	u.AffCode = newAffCode()
	err = create(r.Context(), u)
	if errors.Is(err, store.ErrDuplicate) {
		return httpx.Fail(MsgUsernameTaken)
	}
	return err
}

// isAlnum reports whether s is only ASCII letters and digits.
func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// newAffCode is a short random affiliate code.
func newAffCode() string { return rand.Text()[:8] }

func passwordProblem(pw string) string {
	if err := auth.ValidatePassword(pw); err != nil {
		return auth.MsgPasswordLength
	}
	return ""
}

// firstProblem returns the first non-empty validation message.
func firstProblem(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// login checks the password (throttled per username and client address) and
// sets the session cookie. Wrong password, unknown user and a disabled user
// get one message, so the answer does not tell which usernames exist.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	req.Username = strings.TrimSpace(req.Username)
	if req.Username == "" || req.Password == "" {
		return httpx.Fail(MsgInvalidCredentialsInput)
	}

	if msg := user.ValidateUsernameText(req.Username); msg != "" {
		return httpx.Fail(msg)
	}
	ip := clientIP(r)
	// The attempt counts before the password is checked, so parallel
	// guesses cannot all pass the limit at once.
	attempt, ok, _ := s.Throttle.Reserve(req.Username, ip)
	if !ok {
		return httpx.FailStatus(http.StatusTooManyRequests, auth.MsgTooManyAttempts)
	}
	u, err := s.Store.UserByUsername(r.Context(), req.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hash := u.PasswordHash
	if err != nil {
		// An unknown username costs one bcrypt comparison like a known one.
		hash = auth.DummyHash(s.PasswordCost)
	}
	if !auth.CheckPassword(hash, req.Password) || err != nil {
		return httpx.Fail(MsgLoginFailed)
	}
	if u.Status != user.StatusEnabled {
		return httpx.Fail(MsgUserBanned)
	}
	// Root keeps its password login, so turning it off cannot lock the
	// site's owner out (docs/accounts.md).
	if !s.Options.Current().Accounts.PasswordLogin && u.Role < user.RoleRoot {
		return httpx.Fail(MsgPasswordLoginOff)
	}
	s.Throttle.Refund(attempt)
	s.Sessions.Issue(w, r, u.ID, u.SessionVersion)
	return httpx.OK(w, viewSelf(&u))
}

// MsgInvalidCredentialsInput answers a login without username or password.
const MsgInvalidCredentialsInput = "用户名和密码不能为空"

// clientIP is the peer address. Forwarded headers are not trusted here:
// they are set by clients unless a proxy in front overwrites them.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// logout ends every session of the user, this browser's and all others, and
// clears the cookie. Cookies are stateless, so ending one alone would need a
// server-side list of revoked cookies; ending all is the rule that is always
// right (docs/api.md, Authentication). A stale or forged cookie ends nothing.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if sess, ok := s.Sessions.Read(r, time.Now()); ok {
		if err := s.Store.EndSessionsOf(r.Context(), sess.UserID, sess.Version); err != nil {
			return err
		}
	}
	s.Sessions.Clear(w)
	return httpx.OKText(w, r, MsgLoggedOut)
}

// ownView is the caller's own account with its invitations: how many users
// registered with its aff_code, and the quota their first paid orders
// earned it (issue 31 §4); and the sign-in providers bound to it (one-api's
// github_id and oidc_id, "" when none), so the profile page can offer to
// bind the others.
type ownView struct {
	selfView
	AffCount   int64  `json:"aff_count"`
	AffRewards int64  `json:"aff_history_quota"`
	GitHubID   string `json:"github_id"`
	OidcID     string `json:"oidc_id"`
}

func (s *Server) getSelf(w http.ResponseWriter, r *http.Request) error {
	me := caller(r)
	st, err := s.Store.InviteStatsOf(r.Context(), me.ID)
	if err != nil {
		return err
	}
	v := ownView{selfView: viewSelf(me), AffCount: st.Count, AffRewards: st.Reward}
	if me.GitHubID != nil {
		v.GitHubID = *me.GitHubID
	}
	if me.OidcID != nil {
		v.OidcID = *me.OidcID
	}
	return httpx.OK(w, v)
}

type updateSelfRequest struct {
	DisplayName *string `json:"display_name"`
	Password    *string `json:"password"`
}

// updateSelf changes the caller's display name and password. A new password
// ends the user's other sessions; this one gets a fresh cookie.
func (s *Server) updateSelf(w http.ResponseWriter, r *http.Request) error {
	me := caller(r)
	var req updateSelfRequest
	if err := httpx.DecodeStrict(w, r, &req); err != nil {
		return err
	}
	var patch store.UserPatch
	if req.DisplayName != nil {
		name := strings.TrimSpace(*req.DisplayName)
		if msg := user.ValidateDisplayName(name); msg != "" {
			return httpx.Fail(msg)
		}
		patch.DisplayName = &name
	}
	if req.Password != nil && *req.Password != "" {
		if msg := passwordProblem(*req.Password); msg != "" {
			return httpx.Fail(msg)
		}
		hash, err := s.hashPassword(*req.Password)
		if err != nil {
			return err
		}
		patch.PasswordHash = &hash
	}
	if err := s.Store.UpdateUser(r.Context(), me.ID, patch, nil); err != nil {
		return err
	}
	u, err := s.Store.UserByID(r.Context(), me.ID)
	if err != nil {
		return err
	}
	if patch.PasswordHash != nil {
		s.Sessions.Issue(w, r, u.ID, u.SessionVersion)
	}
	return httpx.OK(w, viewSelf(&u))
}

// deleteSelf soft-deletes the caller and ends its sessions; root may not.
func (s *Server) deleteSelf(w http.ResponseWriter, r *http.Request) error {
	me := caller(r)
	if me.Role >= user.RoleRoot {
		return httpx.Fail(MsgRootCannotDelete)
	}
	deleted := user.StatusDeleted
	// The status change ends the sessions in the same transaction.
	if err := s.Store.UpdateUser(r.Context(), me.ID, store.UserPatch{Status: &deleted}, nil); err != nil {
		return err
	}
	s.Sessions.Clear(w)
	return httpx.OKMessage(w, "")
}

// generateAccessToken replaces the caller's access token with a new UUID;
// the old one stops working at once.
func (s *Server) generateAccessToken(w http.ResponseWriter, r *http.Request) error {
	token := uuid.NewString()
	if err := s.Store.SetAccessToken(r.Context(), caller(r).ID, token); err != nil {
		return err
	}
	return httpx.OK(w, token)
}

func (s *Server) getAffCode(w http.ResponseWriter, r *http.Request) error {
	return httpx.OK(w, caller(r).AffCode)
}
