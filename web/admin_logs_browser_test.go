package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// An admin (not root) reads every user's logs on /admin/logs: a user's
// relay calls and a refused one are listed with the user's name; the
// filters (username and type, then error logs) narrow the list as the API
// does, 20 a page on the server; the keyword search finds the refused
// call; the consume sums match; in Chinese no label is missing.
func TestBrowserAdminReadsEveryLog(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "frank"})
	const calls = 21
	for i := 0; i < calls; i++ {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test")); r.Status != 200 {
			t.Fatalf("relay call %d = %d %s", i, r.Status, r.Body)
		}
	}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("no-such-model")); r.Status == 200 {
		t.Fatal("a call to an unpriced model succeeded")
	}
	e.NewUser("ada", 10)
	p.login(e.Server.URL, "ada", "password-ada")
	p.click(`#nav-admin a[href="/admin/logs"]`)
	p.waitText("h1", "All logs")
	p.waitText("#admin-logs", "frank")

	// Frank's usage logs: 21, on two pages, the sums of the API's stat.
	p.fill(`#admin-log-filters input[name="username"]`, "frank")
	p.choose("#admin-log-type", "2")
	p.click(`#admin-log-filters button[type="submit"]`)
	p.waitText(".pager", fmt.Sprintf("Page 1 of 2 (%d in all)", calls))
	if n := eval[int](p, `document.querySelectorAll('#admin-logs tbody tr[data-log]').length`); n != 20 {
		t.Errorf("first page has %d rows, want 20", n)
	}
	p.waitText("#admin-log-stat", fmt.Sprintf("%d requests", calls))
	api := e.Root().OK("GET", "/api/log/?username=frank&type=2&p=0&page_size=20", nil)
	if api.Total != calls {
		t.Errorf("the API's total = %d, want %d", api.Total, calls)
	}
	p.click(`.pager button:last-child`)
	p.waitText(".pager", "Page 2 of 2")
	waitCount(p, "#admin-logs tbody tr[data-log]", 1)
	p.screenshot("admin-logs")

	// Error logs: the refused call, with its error code.
	p.choose("#admin-log-type", "5")
	p.click(`#admin-log-filters button[type="submit"]`)
	p.waitText("#admin-logs tbody", "no-such-model")
	p.waitText(".pager", "(1 in all)")

	// The keyword search (GET /api/log/search) finds it with every type.
	p.click(`#admin-log-filters button[type="button"]`) // clear
	p.fill(`#admin-log-filters input[name="keyword"]`, "such-model")
	p.click(`#admin-log-filters button[type="submit"]`)
	p.waitText(".pager", "(1 in all)")
	p.waitText("#admin-logs tbody .model", "no-such-model")

	p.choose("#lang", "zh")
	p.waitText("h1", "全部日志")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// waitCount waits until exactly n elements match sel.
func waitCount(p *page, sel string, n int) {
	p.t.Helper()
	js := fmt.Sprintf(`document.querySelectorAll(%s).length === %d`, quote(sel), n)
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		p.t.Fatalf("%s never matched %d elements (matches %d): %v", sel, n,
			eval[int](p, `document.querySelectorAll(`+quote(sel)+`).length`), err)
	}
}
