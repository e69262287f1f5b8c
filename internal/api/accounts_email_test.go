package api_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/smtpfake"
	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/mail"
)

// mailSite is a gateway whose account mails go to a local SMTP server
// (STARTTLS, credentials checked) and whose clock the test moves.
type mailSite struct {
	e     *apptest.Env
	root  *apptest.Client
	smtp  *smtpfake.Server
	clock *apptest.Clock
}

func newMailSite(t *testing.T, options map[string]any) *mailSite {
	t.Helper()
	e := apptest.New(t)
	srv := smtpfake.Start(t, "bot@example.com", "smtp-secret", smtpfake.Options{})
	e.App.SetMailSender(&mail.Sender{Roots: srv.Roots, Timeout: 5 * time.Second})
	clock := apptest.NewClock(time.Now())
	e.App.SetClock(clock.Now)
	root := e.Root()
	set := map[string]any{
		"SMTPServer": srv.Host, "SMTPPort": srv.PortText(), "SMTPAccount": "bot@example.com",
		"SMTPFrom": "bot@example.com", "SMTPToken": "smtp-secret",
	}
	for k, v := range options {
		set[k] = v
	}
	for k, v := range set {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	return &mailSite{e: e, root: root, smtp: srv, clock: clock}
}

var sixDigits = regexp.MustCompile(`<strong>(\d{6})</strong>`)

// codeFor is the code of the last mail sent to addr.
func (m *mailSite) codeFor(t *testing.T, addr string) string {
	t.Helper()
	msgs := m.smtp.To(addr)
	if len(msgs) == 0 {
		t.Fatalf("no mail to %s", addr)
	}
	got := sixDigits.FindStringSubmatch(msgs[len(msgs)-1].Data)
	if got == nil {
		t.Fatalf("no code in %q", msgs[len(msgs)-1].Data)
	}
	return got[1]
}

func register(name, email, code string) map[string]string {
	return map[string]string{"username": name, "password": "password-1", "email": email, "verification_code": code}
}

func TestRegistrationNeedsTheMailedCode(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true})
	c := m.e.Client()
	c.Fail("POST", "/api/user/register", register("ann", "", ""), http.StatusOK, api.MsgCodeRequired)
	c.Fail("POST", "/api/user/register", register("ann", "ann@example.com", ""), http.StatusOK, api.MsgCodeRequired)

	c.OK("GET", "/api/verification?email=Ann@Example.com", nil)
	code := m.codeFor(t, "ann@example.com")
	if msg := m.smtp.To("ann@example.com")[0]; !msg.TLS || msg.Subject() != "modelgate 邮箱验证" {
		t.Fatalf("mail not over TLS or subject %q", msg.Subject())
	}
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	c.Fail("POST", "/api/user/register", register("ann", "ann@example.com", wrong), http.StatusOK, api.MsgCodeInvalid)
	// A refused username leaves the code working: both are one transaction.
	c.Fail("POST", "/api/user/register", register("root", "ann@example.com", code), http.StatusOK, api.MsgUsernameTaken)
	var u struct{ Email string }
	c.OK("POST", "/api/user/register", register("ann", "ann@example.com", code)).Decode(t, &u)
	if u.Email != "ann@example.com" {
		t.Fatalf("email %q", u.Email)
	}
	c.Login("ann", "password-1")
	// The code works once.
	c.Fail("POST", "/api/user/register", register("ann2", "ann@example.com", code), http.StatusOK, api.MsgEmailTaken)
	// An address a user has gets no code.
	c.Fail("GET", "/api/verification?email=ann@example.com", nil, http.StatusOK, api.MsgEmailTaken)
	// The SMTP password is never read back.
	for _, o := range apptest.OKData[[]struct{ Key, Value string }](m.root, "GET", "/api/option/", nil) {
		if o.Key == "SMTPToken" || o.Value == "smtp-secret" {
			t.Fatalf("SMTP password shown: %+v", o)
		}
	}
}

func TestVerificationCodeExpiresAndIsSingleUse(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true})
	c := m.e.Client()
	c.OK("GET", "/api/verification?email=bo@example.com", nil)
	// A second request within the minute is refused and sends nothing.
	c.Fail("GET", "/api/verification?email=bo@example.com", nil, http.StatusOK, api.MsgCodeTooSoon)
	if n := len(m.smtp.To("bo@example.com")); n != 1 {
		t.Fatalf("%d mails", n)
	}
	old := m.codeFor(t, "bo@example.com")
	m.clock.Advance(10*time.Minute + time.Second)
	c.Fail("POST", "/api/user/register", register("bob", "bo@example.com", old), http.StatusOK, api.MsgCodeInvalid)

	c.OK("GET", "/api/verification?email=bo@example.com", nil)
	code := m.codeFor(t, "bo@example.com")
	if code != old {
		c.Fail("POST", "/api/user/register", register("bob", "bo@example.com", old), http.StatusOK, api.MsgCodeInvalid)
	}
	m.clock.Advance(9 * time.Minute)
	c.OK("POST", "/api/user/register", register("bob", "bo@example.com", code))
}

func TestParallelRegistrationsUseOneCodeOnce(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true})
	c := m.e.Client()
	// Parallel code requests for one address mail one code.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { c.Do("GET", "/api/verification?email=cy@example.com", nil) })
	}
	wg.Wait()
	if n := len(m.smtp.To("cy@example.com")); n != 1 {
		t.Fatalf("%d mails for parallel requests", n)
	}
	code := m.codeFor(t, "cy@example.com")
	var mu sync.Mutex
	created := 0
	for i := range 10 {
		wg.Go(func() {
			r := m.e.Client().Do("POST", "/api/user/register", register("cy"+string(rune('a'+i)), "cy@example.com", code))
			if r.Success {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("one code created %d users", created)
	}
}

func TestEmailDomainWhitelist(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true,
		"EmailDomainRestrictionEnabled": true, "EmailDomainWhitelist": "example.com, Corp.example"})
	c := m.e.Client()
	c.Fail("GET", "/api/verification?email=dee@evil.test", nil, http.StatusOK, api.MsgEmailDomainRefused)
	c.Fail("POST", "/api/user/register", register("dee", "dee@evil.test", "123456"), http.StatusOK, api.MsgEmailDomainRefused)
	c.OK("GET", "/api/verification?email=dee@corp.example", nil)
	if len(m.smtp.Messages()) != 1 {
		t.Fatalf("%d mails", len(m.smtp.Messages()))
	}
}

func TestMailFailureIsAnsweredAndRetryable(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true})
	c := m.e.Client()
	m.smtp.SetFailing(true)
	c.Fail("GET", "/api/verification?email=eve@example.com", nil, http.StatusOK, api.MsgMailFailed)
	m.smtp.SetFailing(false)
	// The failed mail's code was taken back: no minute to wait.
	c.OK("GET", "/api/verification?email=eve@example.com", nil)
	// No SMTP server: a clear refusal.
	m.root.OK("PUT", "/api/option/", map[string]any{"key": "SMTPServer", "value": ""})
	c.Fail("GET", "/api/verification?email=eve2@example.com", nil, http.StatusOK, api.MsgSMTPNotConfigured)
}

var resetLink = regexp.MustCompile(`href="([^"]+)"`)

func TestPasswordResetByMail(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"ServerAddress": "https://gate.example/"})
	user, id := m.e.NewUser("fay", 1)
	m.root.OK("PUT", "/api/user/", map[string]any{"id": id, "email": "fay@example.com"})
	c := m.e.Client()
	unknown := c.OK("GET", "/api/reset_password?email=nobody@example.com", nil)
	known := c.OK("GET", "/api/reset_password?email=FAY@example.com", nil)
	if string(unknown.Raw) != string(known.Raw) {
		t.Fatalf("answers differ: %s vs %s", unknown.Raw, known.Raw)
	}
	if n := len(m.smtp.Messages()); n != 1 {
		t.Fatalf("%d mails", n)
	}
	// Within the minute: the same answer, no second mail.
	again := c.OK("GET", "/api/reset_password?email=fay@example.com", nil)
	if string(again.Raw) != string(known.Raw) || len(m.smtp.Messages()) != 1 {
		t.Fatalf("second request: %s, %d mails", again.Raw, len(m.smtp.Messages()))
	}
	link := resetLink.FindStringSubmatch(m.smtp.To("fay@example.com")[0].Data)
	if link == nil {
		t.Fatal("no link in the mail")
	}
	u, err := url.Parse(strings.ReplaceAll(link[1], "&amp;", "&"))
	if err != nil || u.Host != "gate.example" || u.Path != "/user/reset" {
		t.Fatalf("link %q", link[1])
	}
	body := map[string]string{"email": u.Query().Get("email"), "token": u.Query().Get("token")}
	c.Fail("POST", "/api/user/reset", map[string]string{"email": body["email"], "token": "wrong"}, http.StatusOK, api.MsgResetLinkInvalid)
	var password string
	c.OK("POST", "/api/user/reset", body).Decode(t, &password)
	if len(password) != 12 {
		t.Fatalf("password %q", password)
	}
	c.Fail("POST", "/api/user/reset", body, http.StatusOK, api.MsgResetLinkInvalid)
	// The old session ended; the new password logs in, the old does not.
	user.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, "")
	m.e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "fay", "password": "password-fay"}, http.StatusOK, api.MsgLoginFailed)
	m.e.Client().Login("fay", password)

	// A link older than 15 minutes is refused.
	m.clock.Advance(2 * time.Minute)
	c.OK("GET", "/api/reset_password?email=fay@example.com", nil)
	link = resetLink.FindStringSubmatch(m.smtp.To("fay@example.com")[1].Data)
	u, _ = url.Parse(strings.ReplaceAll(link[1], "&amp;", "&"))
	m.clock.Advance(15*time.Minute + time.Second)
	c.Fail("POST", "/api/user/reset", map[string]string{"email": "fay@example.com", "token": u.Query().Get("token")}, http.StatusOK, api.MsgResetLinkInvalid)
}

func TestBindEmail(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, nil)
	user, _ := m.e.NewUser("gil", 1)
	user.OK("GET", "/api/verification?email=gil@example.com", nil)
	user.Fail("GET", "/api/oauth/email/bind?email=gil@example.com&code=999999x", nil, http.StatusOK, api.MsgCodeInvalid)
	user.OK("GET", "/api/oauth/email/bind?email=gil@example.com&code="+m.codeFor(t, "gil@example.com"), nil)
	var self struct{ Email string }
	user.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.Email != "gil@example.com" {
		t.Fatalf("email %q", self.Email)
	}
	m.e.Client().Fail("GET", "/api/oauth/email/bind?email=gil@example.com&code=1", nil, http.StatusUnauthorized, "")

	// The status tells the console whether to offer binding: only while
	// mail can be sent.
	var st struct {
		EmailBind bool `json:"email_bind"`
	}
	m.e.Client().OK("GET", "/api/status", nil).Decode(t, &st)
	if !st.EmailBind {
		t.Fatal("email_bind false with SMTP configured")
	}
	m.root.OK("PUT", "/api/option/", map[string]any{"key": "SMTPServer", "value": ""})
	m.e.Client().OK("GET", "/api/status", nil).Decode(t, &st)
	if st.EmailBind {
		t.Fatal("email_bind true without an SMTP server")
	}
}

func TestAccountRateLimits(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, nil)
	c := m.e.Client()
	// Per email: 5 reset mails an hour (answered the same way whether
	// they were sent), the sixth refused with 429.
	for i := range 5 {
		c.OK("GET", "/api/reset_password?email=hal@example.com", nil)
		m.clock.Advance(time.Second * time.Duration(i+1))
	}
	c.Fail("GET", "/api/reset_password?email=hal@example.com", nil, http.StatusTooManyRequests, auth.MsgTooManyRequests)
	// Per address: 20 an hour whatever the email.
	for i := range 14 {
		c.OK("GET", "/api/reset_password?email=x"+string(rune('a'+i))+"@example.com", nil)
	}
	c.Fail("GET", "/api/reset_password?email=other@example.com", nil, http.StatusTooManyRequests, auth.MsgTooManyRequests)
	// An hour later the window is new.
	m.clock.Advance(time.Hour)
	c.OK("GET", "/api/reset_password?email=hal@example.com", nil)
}

func TestPasswordLoginAndRegisterSwitches(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"PasswordLoginEnabled": false, "PasswordRegisterEnabled": false})
	m.e.Client().Fail("POST", "/api/user/register", map[string]string{"username": "ivy", "password": "password-1"}, http.StatusOK, api.MsgPasswordRegisterOff)
	m.root.OK("POST", "/api/user/", map[string]any{"username": "ivy", "password": "password-ivy"})
	m.e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "ivy", "password": "password-ivy"}, http.StatusOK, api.MsgPasswordLoginOff)
	// Root keeps its password login.
	m.e.Root()
	var st struct {
		PasswordLogin    bool `json:"password_login"`
		PasswordRegister bool `json:"password_register"`
	}
	m.e.Client().OK("GET", "/api/status", nil).Decode(t, &st)
	if st.PasswordLogin || st.PasswordRegister {
		t.Fatalf("status %+v", st)
	}
}

// Bad bytes in every account input are refused with a message and change
// nothing (PostgreSQL would refuse a NUL in a query with a server error).
func TestAccountInputsWithBadBytes(t *testing.T) {
	apptest.Parallel(t)
	m := newMailSite(t, map[string]any{"EmailVerificationEnabled": true})
	c := m.e.Client()
	for _, bad := range []string{"a\x00@example.com", "a\xff@example.com"} {
		c.Fail("GET", "/api/verification?email="+url.QueryEscape(bad), nil, http.StatusOK, "")
		c.Fail("GET", "/api/reset_password?email="+url.QueryEscape(bad), nil, http.StatusOK, "")
		c.Fail("POST", "/api/user/reset", map[string]string{"email": bad, "token": "t\x00"}, http.StatusOK, api.MsgResetLinkInvalid)
		c.Fail("POST", "/api/user/register", register("zed", bad, "123456"), http.StatusOK, "")
	}
	m.root.OK("PUT", "/api/option/", map[string]any{"key": "EmailVerificationEnabled", "value": false})
	c.OK("POST", "/api/user/register", map[string]string{"username": "zed", "password": "password-1", "aff_code": "AB\x00CD"})
	if len(m.smtp.Messages()) != 0 {
		t.Fatalf("%d mails", len(m.smtp.Messages()))
	}
}
