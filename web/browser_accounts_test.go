package web_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/smtpfake"
	"github.com/modelgate/modelgate/internal/mail"
)

// A visitor registers with the code the page had mailed (local SMTP
// server) and lands logged in; the new account logs in.
func TestBrowserRegistersWithMailedCode(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	srv := smtpfake.Start(t, "bot@example.com", "smtp-secret", smtpfake.Options{})
	e.App.SetMailSender(&mail.Sender{Roots: srv.Roots, Timeout: 5 * time.Second})
	root := e.Root()
	for k, v := range map[string]any{"SMTPServer": srv.Host, "SMTPPort": srv.PortText(), "SMTPAccount": "bot@example.com",
		"SMTPToken": "smtp-secret", "EmailVerificationEnabled": true} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	p.do("open registration", chromedp.Navigate(e.Server.URL+"/register"))
	p.waitText("h1", "Register")
	p.fill(`form input[autocomplete="username"]`, "mona")
	p.fill(`form .field:nth-of-type(2) input`, "password-mona")
	p.fill(`form .field:nth-of-type(3) input`, "password-mona")
	p.fill(`form input[type="email"]`, "mona@example.com")
	p.click(`#send-code`)
	p.waitText("[role=status]", "A code was sent")
	msgs := srv.To("mona@example.com")
	if len(msgs) != 1 {
		t.Fatalf("%d mails", len(msgs))
	}
	code := regexp.MustCompile(`<strong>(\d{6})</strong>`).FindStringSubmatch(msgs[0].Data)[1]
	p.fill(`form input[name="verification_code"]`, code)
	p.click(`form button[type="submit"]`)
	// Registered, the visitor is logged in on the dashboard (issue 30 §1).
	p.waitText("h1", "Dashboard")
	p.waitText("#toasts", "Welcome, mona")
	e.Client().Login("mona", "password-mona")
}
