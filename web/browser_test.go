package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Root logs in, sees the administration navigation and the overview; the
// language switch turns every label Chinese and back; the theme toggle
// overrides the system theme.
func TestBrowserRootNavigationLanguageAndTheme(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.waitText("#nav-admin", "Overview")
	p.waitText("#nav-user", "API keys")
	p.screenshot("dashboard-root")

	p.do("open the overview", chromedp.Click(chromedp.CSS(`#nav-admin a[href="/admin"]`)))
	p.waitText("h1", "Overview")
	p.waitText(".stats", "Users")
	p.screenshot("admin-overview")

	p.choose("#lang", "zh")
	p.waitText("h1", "总览")
	p.waitText("#nav-admin", "系统管理")
	p.waitText("#logout", "退出登录")
	if got := eval[string](p, `document.documentElement.lang`); got != "zh-CN" {
		t.Errorf("html lang = %q, want zh-CN", got)
	}
	p.screenshot("admin-overview-zh")
	// The choice survives a reload (localStorage).
	p.do("reload", chromedp.Reload())
	p.waitText("h1", "总览")
	p.choose("#lang", "en")
	p.waitText("h1", "Overview")

	if got := eval[string](p, `document.documentElement.dataset.theme || 'system'`); got != "system" {
		t.Fatalf("theme at start = %q, want system", got)
	}
	p.do("toggle the theme", chromedp.Click(chromedp.CSS("#theme")))
	if got := eval[string](p, `document.documentElement.dataset.theme`); got != "light" {
		t.Errorf("theme after one toggle = %q, want light", got)
	}
	p.do("toggle the theme", chromedp.Click(chromedp.CSS("#theme")))
	// The button names what a press does next, not the theme in use.
	p.waitText("#theme", "Use the system theme")
	p.screenshot("admin-overview-dark")

	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
	p.do("log out", chromedp.Click(chromedp.CSS("#logout")))
	p.waitText("h1", "Log in")
	// The session is over on the server too.
	if r := e.Client().Do("GET", "/api/user/self", nil); r.Status != 401 {
		t.Errorf("after logout /api/user/self = %d", r.Status)
	}
}

// A user has no administration navigation; creates a key, sees it once,
// copies it, and the copied key passes a real relay call.
func TestBrowserUserCreatesCopiesAndUsesAKey(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "alice"})
	_ = g
	p.grantClipboard(e.Server.URL)
	watchCSP(p)
	p.login(e.Server.URL, "alice", "password-alice")
	if n := eval[int](p, `document.querySelectorAll('#nav-admin').length`); n != 0 {
		t.Errorf("a user sees the administration navigation")
	}
	p.waitText("#balance", "¥10.00")

	p.do("open the keys", chromedp.Click(chromedp.CSS(`#nav-user a[href="/keys"]`)))
	p.waitText("h1", "API keys")
	p.waitText("table", "relay") // the key NewGateway made
	p.do("open the form", chromedp.Click(chromedp.CSS("section > button.primary")))
	p.waitText("#keyform-title", "Create a key")
	p.do("create a key",
		chromedp.SendKeys(chromedp.CSS(`form input[maxlength="50"]`), "browser key"),
		// The first whole-number field is requests per minute (0 → "07").
		chromedp.SendKeys(chromedp.CSS(`form input[step="1"]`), "7"),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
	)
	key := p.text("#new-key")
	saved := false
	for _, k := range apptest.OKData[[]apptest.TokenInfo](g.User, "GET", "/api/token/", nil) {
		saved = saved || k.Name == "browser key" && k.RPMLimit == 7 && k.TPMLimit == 0 && k.ConcurrencyLimit == 0
	}
	if !saved {
		t.Error("the form did not save the key with rpm_limit 7")
	}
	if !strings.HasPrefix(key, "sk-") || len(key) != 51 {
		t.Fatalf("shown key %q, want sk- and 48 characters", key)
	}
	p.screenshot("keys-created")
	p.do("copy", chromedp.Click(chromedp.CSS(".created button")))
	p.waitText(".created", "Copied")
	if got := eval[string](p, `navigator.clipboard.readText()`); got != key {
		t.Errorf("clipboard = %q, want the key %q", got, key)
	}

	resp := e.Call(key, "POST", "/v1/chat/completions", map[string]any{
		"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if resp.Status != 200 {
		t.Fatalf("relay with the copied key = %d %s", resp.Status, resp.Body)
	}

	// Shown once: after a reload the list has the key, masked.
	p.do("reload", chromedp.Reload())
	p.waitText("table", "browser key")
	if n := eval[int](p, `document.querySelectorAll('#new-key').length`); n != 0 {
		t.Error("the full key is shown again after a reload")
	}
	masked := key[:7] + "**********" + key[len(key)-4:]
	p.waitText("table", masked)

	// Disable from the list; the server agrees.
	p.do("disable", chromedp.Click(chromedp.CSS("tbody tr:first-child td.actions button")))
	p.waitText("tbody tr:first-child", "Disabled")
	if r := e.Call(key, "POST", "/v1/chat/completions", map[string]any{
		"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}}); r.Status == 200 {
		t.Error("the disabled key still relays")
	}
	p.screenshot("keys-list")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}

	// The call made with the copied key is on the user's dashboard: the
	// charts draw it and the tables list it.
	p.click(`#nav-user a[href="/dashboard"]`)
	p.waitText("h1", "Dashboard")
	p.waitText("#requests-7d", "1")
	checkUsage(p, "dash", "gpt-test", 1)
	p.screenshot("dashboard-charts")
	// The charts follow the theme: after the toggle to dark the bar is in
	// the dark theme's colour and none of the light one is left.
	light := eval[string](p, `getComputedStyle(document.documentElement).getPropertyValue('--chart-1').trim()`)
	p.click("#theme") // system → light
	p.click("#theme") // light → dark
	// The button names what a press does next, not the theme in use.
	p.waitText("#theme", "Use the system theme")
	if dark := eval[string](p, `getComputedStyle(document.documentElement).getPropertyValue('--chart-1').trim()`); dark == light {
		t.Fatalf("--chart-1 is %s in both themes", dark)
	}
	waitChartPixels(p, "#dash-chart-models", "--chart-1", 200)
	p.screenshot("dashboard-charts-dark")
	// In Chinese: the charts' captions and text alternatives, no label missing.
	p.choose("#lang", "zh")
	p.waitText("h1", "仪表盘")
	p.waitText("#dash-chart-models figcaption", "各模型费用")
	// The switch mounts the page afresh (its data is fetched again in the
	// new language), so the text alternative is waited for.
	p.waitJS("the Chinese text alternative", `(document.querySelector('#dash-chart-days [role=img]')?.getAttribute('aria-label') || '').includes('每日费用')`)
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
	p.choose("#lang", "en")
	p.waitText("h1", "Dashboard")

	// Root's overview shows the same call among every user's usage.
	p.click("#logout")
	p.waitText("h1", "Log in")
	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin"]`)
	p.waitText("h1", "Overview")
	checkUsage(p, "overview", "gpt-test", 1)
	p.choose("#range", "today")
	p.waitText("#overview-usage-title", "Today")
	p.waitText(`#overview-models tr[data-model="gpt-test"] .requests`, "1")
	if n := eval[int](p, `document.querySelectorAll('#overview-days tbody tr').length`); n != 1 {
		t.Errorf("today's per-day table has %d rows, want 1", n)
	}
	p.choose("#range", "30d")
	p.waitText("#overview-usage-title", "Last 30 days")
	if n := eval[int](p, `document.querySelectorAll('#overview-days tbody tr').length`); n != 30 {
		t.Errorf("30 days' per-day table has %d rows, want 30", n)
	}
	waitChartPixels(p, "#overview-chart-models", "--chart-1", 200)
	p.screenshot("admin-overview-charts")
	p.choose("#lang", "zh")
	p.waitText("h1", "总览")
	p.waitText("#overview-chart-days figcaption", "每日费用")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// An API failure is shown as the server sent it, in the page's language
// (the console asks for it with Accept-Language).
func TestBrowserShowsAPIMessages(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	p.do("open the console", chromedp.Navigate(e.Server.URL+"/login"))
	p.waitText("h1", "Log in")
	p.do("log in wrongly",
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "root"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "not-the-password"),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
	)
	p.waitText("[role=alert]", "wrong username or password, or the user is banned")
	p.screenshot("login-failed")
}
