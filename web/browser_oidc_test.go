package web_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/oidcfake"
	"github.com/modelgate/modelgate/internal/apptest/smtpfake"
	"github.com/modelgate/modelgate/internal/mail"
)

// arrive waits, across page loads, until the page at path shows want in
// sel. A plain poll that runs while the browser goes to a provider and
// back fails at once ("Inspected target navigated or closed") with the
// returning page still blank: the first attempt at the OIDC browser test
// read that as a console that did not start, while the console was fine.
// So a failed poll is tried again on the page that loaded, until the
// bound.
func (p *page) arrive(path, sel, want string) {
	p.t.Helper()
	js := `(() => { if (location.pathname !== ` + quote(path) + `) return false;
		const e = document.querySelector(` + quote(sel) + `); return !!e && e.innerText.includes(` + quote(want) + `); })()`
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
		if err == nil {
			return
		}
		if p.ctx.Err() != nil || time.Now().After(deadline) {
			at, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
			p.t.Fatalf("never arrived at %s showing %q in %s (%v); the page is:\n%s", path, want, sel, err, at)
		}
	}
}

// selfInPage is GET /api/user/self with the page's session cookie.
func selfInPage(p *page) map[string]any {
	p.t.Helper()
	raw := eval[string](p, `fetch('/api/user/self').then((r) => r.text())`)
	var env struct {
		Success bool
		Data    map[string]any
	}
	if err := json.Unmarshal([]byte(raw), &env); err != nil || !env.Success {
		p.t.Fatalf("self in the page: %s (%v)", raw, err)
	}
	return env.Data
}

// oidcConsole is a gateway with OpenID Connect sign-in on, against a local
// provider that approves at once (as a provider does after its own login
// page).
func oidcConsole(t *testing.T) (*apptest.Env, *oidcfake.Provider) {
	t.Helper()
	e := apptest.New(t)
	idp := oidcfake.Start(t, "gate-client", "gate-secret", time.Now)
	root := e.Root()
	for k, v := range map[string]any{"OidcEnabled": true, "OidcClientId": "gate-client", "OidcClientSecret": "gate-secret",
		"OidcWellKnown": idp.WellKnown(), "NewUserQuota": 1_500_000} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	return e, idp
}

// A visitor presses the OIDC button on the login page, the provider sends
// the browser back to /oauth/oidc, and the console finishes the sign-in:
// the dashboard of a new user named after the provider's preferred
// username. Logging out and in again the same way is the same user.
func TestBrowserSignsInWithOIDC(t *testing.T) {
	p := newPage(t)
	e, idp := oidcConsole(t)
	idp.SetUser(oidcfake.User{Subject: "sub-olga", PreferredUsername: "olga", Email: "olga@example.com", EmailVerified: true})

	p.do("open the console", chromedp.Navigate(e.Server.URL+"/"))
	p.waitText("h1", "Log in")
	p.click(`#login-oidc`)
	p.arrive("/dashboard", "h1", "Dashboard")
	p.waitText(".who", "olga")
	p.waitText("#balance", "¥1.50")
	p.screenshot("oidc-signed-in")
	me := selfInPage(p)
	if me["username"] != "olga" || me["email"] != "olga@example.com" || me["oidc_id"] != "sub-olga" {
		t.Fatalf("signed in as %v", me)
	}

	p.click(`#logout`)
	p.waitText("h1", "Log in")
	p.click(`#login-oidc`)
	p.arrive("/dashboard", "h1", "Dashboard")
	if again := selfInPage(p); again["id"] != me["id"] {
		t.Fatalf("second sign-in is user %v, want %v", again["id"], me["id"])
	}
	if idp.Tokens != 2 {
		t.Errorf("%d token exchanges, want 2", idp.Tokens)
	}
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// A user with a password binds the OIDC provider from the profile page
// (the provider's callback lands on the console while logged in and comes
// back to the profile), and an email address with a mailed code; then
// the provider's button on the login page logs into this same user.
func TestBrowserBindsOIDCAndEmailFromProfile(t *testing.T) {
	p := newPage(t)
	e, idp := oidcConsole(t)
	srv := smtpfake.Start(t, "bot@example.com", "smtp-secret", smtpfake.Options{})
	e.App.SetMailSender(&mail.Sender{Roots: srv.Roots, Timeout: 5 * time.Second})
	for k, v := range map[string]any{"SMTPServer": srv.Host, "SMTPPort": srv.PortText(), "SMTPAccount": "bot@example.com",
		"SMTPToken": "smtp-secret"} {
		e.Root().OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	_, patID := e.NewUser("pat", 1)
	idp.SetUser(oidcfake.User{Subject: "sub-pat", PreferredUsername: "someone-else"})

	p.login(e.Server.URL, "pat", "password-pat")
	p.visit(`#nav-user a[href="/profile"]`, "Profile")
	p.waitText("#method-oidc", "Not bound")
	p.waitText("#method-email", "Not bound")
	p.click(`#bind-oidc`)
	p.arrive("/profile", "#method-oidc", "sub-pat")
	p.waitText("[role=status]", "The account is bound")
	if me := selfInPage(p); me["oidc_id"] != "sub-pat" || me["username"] != "pat" {
		t.Fatalf("after binding: %v", me)
	}

	p.fill(`#bind-email input[name="email"]`, "pat@example.com")
	p.click(`#bind-send-code`)
	p.waitText("#bind-email [role=status]", "A code was sent")
	msgs := srv.To("pat@example.com")
	if len(msgs) != 1 {
		t.Fatalf("%d mails", len(msgs))
	}
	code := regexp.MustCompile(`<strong>(\d{6})</strong>`).FindStringSubmatch(msgs[0].Data)[1]
	p.fill(`#bind-email input[name="code"]`, "000000x")
	p.click(`#bind-email button[type="submit"]`)
	p.waitText("#bind-email [role=alert]", "wrong or expired verification code")
	p.fill(`#bind-email input[name="code"]`, code)
	p.click(`#bind-email button[type="submit"]`)
	p.waitText("#bind-email [role=status]", "The email address is bound.")
	p.waitText("#method-email", "pat@example.com")
	p.screenshot("profile-bound")

	p.click(`#logout`)
	p.waitText("h1", "Log in")
	p.click(`#login-oidc`)
	p.arrive("/dashboard", "h1", "Dashboard")
	if me := selfInPage(p); me["id"] != float64(patID) || me["email"] != "pat@example.com" {
		t.Fatalf("OIDC sign-in after binding: %v, want user %d", me, patID)
	}
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// An inviter copies the invitation link from the profile page; a visitor
// registers through it; once the invitee's first order is paid, the
// inviter's profile shows one invitee and the reward, and a second paid
// order changes nothing.
func TestBrowserShowsInvitations(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()
	for k, v := range map[string]any{"QuotaForInviter": 300_000, "QuotaForInvitee": 100_000} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	root.OK("PUT", "/api/setting/payment/bank", map[string]any{"enabled": true, "config": map[string]any{
		"account_name": "Example Ltd", "account_no": "6222 0000 1111", "bank_name": "ICBC", "branch": "Haidian", "notes": "order number"}})
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 0}}})
	e.NewUser("ivy", 1)

	p.login(e.Server.URL, "ivy", "password-ivy")
	p.visit(`#nav-user a[href="/profile"]`, "Profile")
	p.waitText("#aff-count", "0")
	p.waitText("#aff-rewards", "¥0.00")
	link := p.text("#invite-link")
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(e.Server.URL) + `/register\?aff=\w+$`).MatchString(link) {
		t.Fatalf("invitation link %q", link)
	}

	p.click(`#logout`)
	p.waitText("h1", "Log in")
	p.do("open the invitation link", chromedp.Navigate(link))
	p.waitText("h1", "Register")
	p.fill(`form input[autocomplete="username"]`, "ivan")
	p.fill(`form .field:nth-of-type(2) input`, "password-ivan")
	p.fill(`form .field:nth-of-type(3) input`, "password-ivan")
	p.click(`form button[type="submit"]`)
	p.waitText("h1", "Dashboard")
	p.waitText("#toasts", "Welcome, ivan")
	p.click(`#logout`) // before ivan's API session: logging out ends the user's sessions
	p.waitText("h1", "Log in")

	ivan := e.Client()
	ivan.Login("ivan", "password-ivan")
	var self struct{ Quota int64 }
	ivan.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.Quota != 100_000 {
		t.Fatalf("invitee's quota %d, want QuotaForInvitee", self.Quota)
	}
	pay := func(tradeNo string) {
		t.Helper()
		var order struct {
			Order struct{ ID int64 } `json:"order"`
		}
		if err := json.Unmarshal(ivan.OK("POST", "/api/topup/order", map[string]any{"amount": 1, "pay_method": "bank"}).Raw, &order); err != nil {
			t.Fatal(err)
		}
		root.OK("PUT", apptest.Path("/api/order/%d", order.Order.ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": tradeNo})
	}
	pay("W-1")

	p.login(e.Server.URL, "ivy", "password-ivy")
	p.visit(`#nav-user a[href="/profile"]`, "Profile")
	p.waitText("#aff-count", "1")
	p.waitText("#aff-rewards", "¥0.30")
	p.screenshot("profile-invitations")

	pay("W-2")
	p.visit(`#nav-user a[href="/dashboard"]`, "Dashboard")
	p.waitText("#balance", "¥0.30")
	p.visit(`#nav-user a[href="/profile"]`, "Profile")
	p.waitText("#aff-count", "1")
	p.waitText("#aff-rewards", "¥0.30")
	if me := selfInPage(p); me["aff_count"] != float64(1) || me["aff_history_quota"] != float64(300_000) || me["quota"] != float64(300_000) {
		t.Fatalf("inviter after a second paid order: %v", me)
	}
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
