package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/mail"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Messages of the email routes (issue 31; docs/accounts.md).
const (
	MsgEmailRequired       = "请输入邮箱地址"
	MsgEmailDomainRefused  = "管理员启用了邮箱域名白名单,您的邮箱地址的域名不在白名单中"
	MsgEmailTaken          = "邮箱地址已被占用"
	MsgSMTPNotConfigured   = "管理员未配置 SMTP,无法发送邮件"
	MsgMailFailed          = "邮件发送失败,请稍后再试或联系管理员"
	MsgCodeTooSoon         = "验证码发送过于频繁,请 1 分钟后再试"
	MsgCodeRequired        = "管理员开启了邮箱验证,请输入邮箱地址和验证码"
	MsgCodeInvalid         = "验证码错误或已过期"
	MsgResetLinkInvalid    = "重置链接非法或已过期"
	MsgPasswordRegisterOff = "管理员关闭了通过密码进行注册,请使用第三方账户验证的形式进行注册"
	MsgPasswordLoginOff    = "管理员关闭了密码登录"
)

// Rate limits of the account actions per client address and per email, in
// one-hour windows (docs/accounts.md, Limits). Every attempt counts.
var (
	limitRegisterPerIP = auth.ActionLimit{Max: 20, Window: time.Hour}
	limitMailPerIP     = auth.ActionLimit{Max: 20, Window: time.Hour}
	limitMailPerEmail  = auth.ActionLimit{Max: 5, Window: time.Hour}
	limitCodePerEmail  = auth.ActionLimit{Max: 10, Window: time.Hour}
)

// now is the clock of codes and limits (Deps.Now).
func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// mailLang is the language of a mail to the requester: the reader's
// language (its Accept-Language when that names zh or en, else the site's
// MessageLanguage), as httpx.Adapt found it.
func (s *Server) mailLang(r *http.Request) string {
	return string(httpx.Lang(r))
}

// limited counts an attempt of action by the caller's address and, when
// given, its email, and refuses it with 429 beyond the limits.
func (s *Server) limited(r *http.Request, action string, perIP auth.ActionLimit, email string, perEmail auth.ActionLimit) error {
	ok := s.Limits.Allow(perIP, action+"|ip|"+clientIP(r))
	if email != "" {
		ok = s.Limits.Allow(perEmail, action+"|email|"+email) && ok
	}
	if !ok {
		return httpx.FailStatus(http.StatusTooManyRequests, auth.MsgTooManyRequests)
	}
	return nil
}

// checkEmail validates an address for registration or binding: format and
// the domain whitelist. It answers the normalized address.
func checkEmail(opts *option.Snapshot, raw string) (string, error) {
	email := user.NormalizeEmail(raw)
	if email == "" {
		return "", httpx.Fail(MsgEmailRequired)
	}
	if msg := user.ValidateEmail(email); msg != "" {
		return "", httpx.Fail(msg)
	}
	if !opts.Accounts.DomainAllowed(email) {
		return "", httpx.Fail(MsgEmailDomainRefused)
	}
	return email, nil
}

// sendVerification serves GET /api/verification: mail a 6-digit code to an
// address no live user has, at most one a minute per address.
func (s *Server) sendVerification(w http.ResponseWriter, r *http.Request) error {
	opts := s.Options.Current()
	email := user.NormalizeEmail(r.URL.Query().Get("email"))
	if err := s.limited(r, "verify", limitMailPerIP, email, limitMailPerEmail); err != nil {
		return err
	}
	if err := s.checkTurnstile(r, ""); err != nil {
		return err
	}
	email, err := checkEmail(opts, email)
	if err != nil {
		return err
	}
	if !opts.Accounts.SMTP.Configured() {
		return httpx.Fail(MsgSMTPNotConfigured)
	}
	taken, err := s.Store.EmailTaken(r.Context(), email)
	if err != nil {
		return err
	}
	if taken {
		return httpx.Fail(MsgEmailTaken)
	}
	code := user.NewVerificationCode()
	msg := mail.VerificationMail(s.mailLang(r), opts.SystemName, email, code, int(user.VerificationTTL/time.Minute))
	if err := s.issueAndSend(r.Context(), opts, user.PurposeVerify, email, code, user.VerificationTTL, msg); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return httpx.Fail(MsgCodeTooSoon)
		}
		return err
	}
	return httpx.OKMessage(w, "")
}

// issueAndSend stores the code (refused with store.ErrConflict within a
// minute of the last one) and mails it. A mail that could not be sent takes
// its code back, so the address may ask again at once; the failure is
// logged and answered MsgMailFailed.
func (s *Server) issueAndSend(ctx context.Context, opts *option.Snapshot, purpose, email, code string, ttl time.Duration, msg mail.Message) error {
	now := s.now()
	c := store.AccountCode{Purpose: purpose, Email: email, CodeHash: user.HashCode(code),
		CreatedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	if err := s.Store.IssueAccountCode(ctx, c, now.Add(-user.ResendAfter).Unix()); err != nil {
		return err
	}
	if err := s.Mailer().Send(ctx, opts.Accounts.SMTP, msg); err != nil {
		s.Log.Error("account mail not sent", "purpose", purpose, "err", err)
		if err := s.Store.DeleteAccountCode(context.WithoutCancel(ctx), purpose, email, c.CodeHash); err != nil {
			s.Log.Error("account code of an unsent mail not removed", "err", err)
		}
		return httpx.Fail(MsgMailFailed)
	}
	return nil
}

// sendPasswordReset serves GET /api/reset_password: mail a reset link to
// the address when a live user has it. The answer is the same either way,
// also when the mail fails or the last link is less than a minute old, so
// it does not tell which addresses have accounts (failures are logged).
func (s *Server) sendPasswordReset(w http.ResponseWriter, r *http.Request) error {
	opts := s.Options.Current()
	email := user.NormalizeEmail(r.URL.Query().Get("email"))
	if err := s.limited(r, "reset", limitMailPerIP, email, limitMailPerEmail); err != nil {
		return err
	}
	if err := s.checkTurnstile(r, ""); err != nil {
		return err
	}
	if email == "" {
		return httpx.Fail(MsgEmailRequired)
	}
	if msg := user.ValidateEmail(email); msg != "" {
		return httpx.Fail(msg)
	}
	if !opts.Accounts.SMTP.Configured() {
		return httpx.Fail(MsgSMTPNotConfigured)
	}
	u, err := s.Store.UserByEmail(r.Context(), email)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpx.OKMessage(w, "")
	case err != nil:
		return err
	}
	if u.Status != user.StatusEnabled {
		return httpx.OKMessage(w, "")
	}
	token := user.NewResetToken()
	link := s.siteAddress(r, opts) + "/user/reset?" + url.Values{"email": {email}, "token": {token}}.Encode()
	msg := mail.ResetMail(s.mailLang(r), opts.SystemName, email, link, int(user.ResetTTL/time.Minute))
	if err := s.issueAndSend(r.Context(), opts, user.PurposeReset, email, token, user.ResetTTL, msg); err != nil {
		var fail *httpx.Error
		if !errors.Is(err, store.ErrConflict) && !errors.As(err, &fail) {
			return err
		}
	}
	return httpx.OKMessage(w, "")
}

// siteAddress is the start of links in mails: option ServerAddress, else
// the scheme and host this request came to.
func (s *Server) siteAddress(r *http.Request, opts *option.Snapshot) string {
	if opts.Accounts.ServerAddress != "" {
		return opts.Accounts.ServerAddress
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

type resetRequest struct {
	Email string `json:"email"`
	Token string `json:"token"`
}

// resetPassword serves POST /api/user/reset: a valid link's token sets a
// new random password, answered once as data, and ends the user's sessions.
func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request) error {
	var req resetRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	email := user.NormalizeEmail(req.Email)
	if err := s.limited(r, "reset-use", limitMailPerIP, email, limitCodePerEmail); err != nil {
		return err
	}
	if email == "" || user.ValidateEmail(email) != "" || req.Token == "" || len(req.Token) > 64 {
		return httpx.Fail(MsgResetLinkInvalid)
	}
	err := s.Store.UseAccountCode(r.Context(), user.PurposeReset, email, user.HashCode(req.Token), s.now().Unix())
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgResetLinkInvalid)
	}
	if err != nil {
		return err
	}
	u, err := s.Store.UserByEmail(r.Context(), email)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgResetLinkInvalid)
	}
	if err != nil {
		return err
	}
	password := user.NewPassword()
	hash, err := s.hashPassword(password)
	if err != nil {
		return err
	}
	// A new hash bumps the session version: every session of the user ends.
	if err := s.Store.UpdateUser(r.Context(), u.ID, store.UserPatch{PasswordHash: &hash}, nil); err != nil {
		return err
	}
	return httpx.OK(w, password)
}

// bindEmail serves GET /api/oauth/email/bind: the logged-in user takes an
// address it proved with a mailed code.
func (s *Server) bindEmail(w http.ResponseWriter, r *http.Request) error {
	opts := s.Options.Current()
	me := caller(r)
	email := user.NormalizeEmail(r.URL.Query().Get("email"))
	if err := s.limited(r, "bind", limitRegisterPerIP, email, limitCodePerEmail); err != nil {
		return err
	}
	email, err := checkEmail(opts, email)
	if err != nil {
		return err
	}
	if holder, err := s.Store.UserByEmail(r.Context(), email); err == nil && holder.ID != me.ID {
		return httpx.Fail(MsgEmailTaken)
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	code := strings.TrimSpace(r.URL.Query().Get("code"))
	err = s.Store.UseAccountCode(r.Context(), user.PurposeVerify, email, user.HashCode(code), s.now().Unix())
	if errors.Is(err, store.ErrNotFound) || code == "" {
		return httpx.Fail(MsgCodeInvalid)
	}
	if err != nil {
		return err
	}
	if err := s.Store.UpdateUser(r.Context(), me.ID, store.UserPatch{Email: &email}, nil); err != nil {
		return err
	}
	return httpx.OKMessage(w, "")
}
