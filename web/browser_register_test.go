package web_test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
)

// A visitor registers through the page (two different passwords are
// refused in the page first), lands logged in on the dashboard, and redeems a code root created:
// the page shows the credited amount, the balance moves on the server and
// on the dashboard, and the same code again shows the server's refusal.
func TestBrowserUserRegistersAndRedeemsACode(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()
	var codes []string
	r := root.OK("POST", "/api/redemption/", map[string]any{"name": "welcome", "quota": 2_500_000, "count": 1})
	if err := json.Unmarshal(r.Data, &codes); err != nil || len(codes) != 1 {
		t.Fatalf("created codes %s: %v", r.Data, err)
	}

	p.do("open the console", chromedp.Navigate(e.Server.URL+"/"))
	p.waitText("h1", "Log in")
	p.click(`a[href="/register"]`)
	p.waitText("h1", "Register")
	p.fill(`form input[autocomplete="username"]`, "carol")
	p.fill(`form input[autocomplete="new-password"]`, "password-carol")
	p.fill(`form .field:nth-of-type(3) input`, "password-other")
	p.click(`form button[type="submit"]`)
	p.waitText("[role=alert]", "The two passwords differ.")
	if r := e.Client().Do("POST", "/api/user/login", map[string]any{"username": "carol", "password": "password-carol"}); r.Success {
		t.Fatal("carol exists after the page refused the form")
	}

	p.fill(`form .field:nth-of-type(3) input`, "password-carol")
	p.click(`form button[type="submit"]`)
	// Registered, the visitor lands on the dashboard logged in (issue 30
	// §1), with a welcome that stays a few seconds.
	p.waitText("h1", "Dashboard")
	p.waitText("#toasts", "Welcome, carol")
	p.waitText("#balance", "¥0.00")
	if got := eval[string](p, `location.pathname`); got != "/dashboard" {
		t.Errorf("after registering the address is %s, want /dashboard", got)
	}
	p.screenshot("register-done")

	p.click(`#nav-user a[href="/redeem"]`)
	p.waitText("h1", "Redeem a code")
	p.fill(`form input[autocomplete="off"]`, codes[0])
	p.click(`form button[type="submit"]`)
	p.waitText("[role=status]", "¥2.50 added to your balance.")
	p.screenshot("redeem-done")

	carol := e.Client()
	carol.Login("carol", "password-carol")
	var self struct{ Quota int64 }
	carol.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.Quota != 2_500_000 {
		t.Errorf("carol's balance after redeeming = %d, want 2500000", self.Quota)
	}

	p.fill(`form input[autocomplete="off"]`, codes[0])
	p.click(`form button[type="submit"]`)
	p.waitText("[role=alert]", "this redemption code has been used")
	carol.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.Quota != 2_500_000 {
		t.Errorf("carol's balance after redeeming twice = %d, want 2500000", self.Quota)
	}

	p.click(`#nav-user a[href="/dashboard"]`)
	p.waitText("#balance", "¥2.50")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
