package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// phone makes the tab a 390 × 844 phone (the viewport meta tag then
// gives a 390 px layout) and counts the page's fetches in flight, so a
// check can wait until a page's data has arrived and been drawn.
func (p *page) phone() {
	p.t.Helper()
	p.do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	_, err := chromedp.Call(p.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.inflight = 0; { const f = window.fetch.bind(window);
			window.fetch = (...a) => { window.inflight++; return f(...a).finally(() => { window.inflight--; }); }; }`})
	if err != nil {
		p.t.Fatalf("count fetches: %v", err)
	}
}

// settled waits until the page rendered, ran its effects, and every fetch
// they started has answered and been drawn.
func (p *page) settled() {
	p.t.Helper()
	frames := `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => r(true)))))`
	idle := `document.readyState === 'complete' && window.inflight === 0 && !!document.querySelector('main h1, main[aria-busy]')`
	for range 2 { // an effect may start a second fetch after the first answer
		eval[bool](p, frames)
		if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](idle, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			p.t.Fatalf("%s never settled: %v", eval[string](p, `location.pathname`), err)
		}
	}
	eval[bool](p, frames)
}

// Every page of the console, as a user and as root, fits a 390 × 844
// phone: no page is wider than the viewport (wide tables scroll in their
// own box); the navigation is behind the menu button, which opens it.
// The data make the tables wide: relay logs with long details, an order,
// a plan with limits, a channel, prices, codes.
func TestBrowserEveryPageFitsAPhone(t *testing.T) {
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "alice"})
	for range 3 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test")); r.Status != 200 {
			t.Fatalf("relay = %d %s", r.Status, r.Body)
		}
	}
	e.Call(g.Key, "POST", "/v1/chat/completions", chat("a-model-without-any-price-whose-name-is-rather-long"))
	enableBank(g.Root)
	g.Root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 1000000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 10000000}}})
	g.Root.OK("POST", "/api/plan/", map[string]any{"name": "Pro", "price": 30, "duration_days": 30, "status": 1,
		"model_limits": `{"gpt-test":{"period_h":5,"request_period":10,"token_week":100000}}`, "default_model": "gpt-test"})
	g.User.OK("POST", "/api/topup/order", map[string]any{"amount": 12, "pay_method": "bank"})
	g.Root.OK("POST", "/api/redemption/", map[string]any{"name": "phone", "quota": 1_000_000, "count": 2})

	for _, who := range []struct{ name, password string }{{"alice", "password-alice"}, {"root", apptest.RootPassword}} {
		t.Run(who.name, func(t *testing.T) {
			p := newPage(t)
			p.phone()
			p.login(e.Server.URL, who.name, who.password)
			if eval[bool](p, `getComputedStyle(document.querySelector('#nav-groups')).display !== 'none'`) {
				t.Error("the navigation shows on a phone before the menu is opened")
			}
			p.click("#menu")
			p.click(`#nav-user a[href="/keys"]`)
			p.waitText("h1", "API keys")
			if eval[bool](p, `getComputedStyle(document.querySelector('#nav-groups')).display !== 'none'`) {
				t.Error("the menu stays open after a page was chosen")
			}

			paths := eval[[]string](p, `Promise.all([import('/js/routes.js'), fetch('/api/user/self').then((r) => r.json())])
				.then(([m, self]) => m.routes.filter((r) => r.role <= self.data.role).map((r) => r.path))`)
			if who.name == "root" && len(paths) < 20 || who.name == "alice" && len(paths) < 9 {
				t.Fatalf("%s's pages: %v", who.name, paths)
			}
			var wide []string
			for _, path := range paths {
				// In-app navigation, as the menu does: a reload per page
				// made the test a minute slower on a loaded machine.
				eval[bool](p, `import('/js/router.js').then((m) => { m.navigate(`+quote(path)+`); return true; })`)
				p.settled()
				// A phone zooms out to show a page wider than the screen,
				// which widens innerWidth with it: the page is held to 390
				// px as well as to innerWidth.
				w := eval[[]int](p, `[document.documentElement.scrollWidth, innerWidth]`)
				if w[0] > w[1] || w[0] > 390 {
					wide = append(wide, path+" is "+strconv.Itoa(w[0])+" px wide")
					p.screenshot("phone-wide-" + who.name + strings.ReplaceAll(path, "/", "-"))
				}
			}
			eval[bool](p, `import('/js/router.js').then((m) => { m.navigate('/logs'); return true; })`)
			p.settled()
			p.click("#menu")
			p.screenshot("phone-" + who.name + "-logs-menu")
			if len(wide) > 0 {
				t.Errorf("wider than the 390 px viewport: %v", wide)
			}
		})
	}
}
