package web_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// fill replaces an input's or textarea's value and fires the input event, as
// typing over it would (SendKeys only appends).
func (p *page) fill(sel, value string) {
	p.t.Helper()
	p.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	eval[bool](p, `(() => { const e = document.querySelector(`+quote(sel)+`);
		const proto = e.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, 'value').set.call(e, `+quote(value)+`);
		e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`)
}

// click clicks the first element matching sel once it is visible.
func (p *page) click(sel string) {
	p.t.Helper()
	p.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// visit clicks the navigation link sel until the page's h1 shows h1. A
// click that lands while the page re-renders the navigation (a language
// switch, a page's data arriving) hits a link that is being replaced and
// goes nowhere: CI's -race run saw it; a user would click again.
func (p *page) visit(sel, h1 string) {
	p.t.Helper()
	shown := `(() => { const e = document.querySelector('h1'); return !!e && e.innerText.includes(` + quote(h1) + `); })()`
	for range 3 {
		p.click(sel)
		if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](shown, chromedp.WithPollingTimeout(5*time.Second))); err == nil {
			return
		}
	}
	p.waitText("h1", h1)
}

func chat(model string) map[string]any {
	return map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
}

// Root creates a channel to the fake upstream through the channels page
// (first with a wrong key: the test button shows the upstream's refusal;
// then edited with the right key: the test shows the latency), adds the
// model's price through the prices page, and a user's relay call through
// that channel succeeds, with the model mapping applied.
func TestBrowserRootCreatesChannelAndPriceThenRelays(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	alice, aliceID := e.NewUser("alice", 1)
	e.Root().OK("POST", "/api/topup", map[string]any{"user_id": aliceID, "quota": 10_000_000})
	key := alice.CreateToken(map[string]any{"name": "relay", "unlimited_quota": true}).Key

	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/channels"]`)
	p.waitText("h1", "Channels")
	p.click("#channel-new")
	p.waitText("#channelform-title", "Create a channel")
	p.choose(`#channel-form select[name="type"]`, "1")
	p.do("fill the channel form",
		chromedp.SendKeys(chromedp.CSS(`#channel-form input[name="name"]`), "browser channel"),
		chromedp.SendKeys(chromedp.CSS(`#channel-form input[name="base_url"]`), up.URL),
		chromedp.SendKeys(chromedp.CSS(`#channel-form input[name="key"]`), "wrong-key"),
		chromedp.SendKeys(chromedp.CSS(`#channel-form input[name="models"]`), "browser-model"),
	)
	p.fill(`#channel-form textarea[name="model_mapping"]`, `{"browser-model": "upstream-model"}`)
	p.screenshot("admin-channel-form")
	p.click(`#channel-form button[type="submit"]`)
	// The confirmation and the row's mark stay TOAST_MS: checked first.
	p.waitText("#toasts", "Channel browser channel saved.")
	p.waitText(`tr.saved[data-channel="browser channel"]`, "browser channel")

	p.click(`tr[data-channel="browser channel"] button.test`)
	p.waitText(`tr[data-channel="browser channel"] .test-result.error`, "channel test failed")
	p.waitText(`tr[data-channel="browser channel"] .last-error`, "Last error")
	p.screenshot("admin-channel-test-failed")

	p.do("edit", chromedp.Click(chromedp.CSS(`tr[data-channel="browser channel"] td.actions button:nth-child(3)`)))
	p.waitText("#channelform-title", "Edit the channel")
	if got := eval[string](p, `document.querySelector('#channel-form textarea[name="model_mapping"]').value`); !strings.Contains(got, "upstream-model") {
		t.Errorf("the edit form's mapping = %q", got)
	}
	p.do("set the right key", chromedp.SendKeys(chromedp.CSS(`#channel-form input[name="key"]`), fakeupstream.DefaultKey))
	p.click(`#channel-form button[type="submit"]`)
	// The form closes once the server saved the key; the table showed the
	// channel already, so waiting on it let the test run with the old key.
	p.waitText("#channel-new", "Create a channel")
	p.click(`tr[data-channel="browser channel"] button.test`)
	p.waitText(`tr[data-channel="browser channel"] .test-result.ok`, "ms (browser-model)")
	p.screenshot("admin-channels")

	// No price yet: the model cannot be called.
	if r := e.Call(key, "POST", "/v1/chat/completions", chat("browser-model")); r.Status == 200 {
		t.Fatalf("a model without a price relayed")
	}
	p.click(`#nav-admin a[href="/admin/prices"]`)
	p.waitText("h1", "Prices")
	p.click("#model-price-new")
	p.do("fill the price form",
		chromedp.SendKeys(chromedp.CSS(`#model-price-form input[name="model_name"]`), "browser-model"))
	p.fill(`#model-price-form input[name="input_price"]`, "2")
	p.fill(`#model-price-form input[name="output_price"]`, "8")
	p.click(`#model-price-form button[type="submit"]`)
	p.waitText("#toasts", "Price browser-model saved.")
	p.waitText(`#model-prices tr.saved[data-model="browser-model"]`, "Per token")
	p.screenshot("admin-prices")

	resp := e.Call(key, "POST", "/v1/chat/completions", chat("browser-model"))
	if resp.Status != 200 {
		t.Fatalf("relay through the new channel = %d %s", resp.Status, resp.Body)
	}
	if got := up.LastRequest().Model; got != "upstream-model" {
		t.Errorf("upstream saw model %q, want the mapped upstream-model", got)
	}
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// Root finds a user, tops it up with a remark (the balance and the log
// follow), disables and enables it; batch-creates redemption codes, copies
// them all, and the user redeems one; the cluster page shows the server's
// "cluster mode is off". Every new label exists in both languages.
func TestBrowserRootManagesUsersAndCodes(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	e.NewUser("carol", 1)
	bob, bobID := e.NewUser("bob", 1)
	p.grantClipboard(e.Server.URL)
	p.login(e.Server.URL, "root", apptest.RootPassword)

	for i := range 20 { // 23 users in all: two pages of 20
		e.Root().OK("POST", "/api/user/", map[string]any{"username": apptest.Path("filler%02d", i), "password": "password-filler"})
	}
	p.click(`#nav-admin a[href="/admin/users"]`)
	p.waitText("h1", "Users")
	p.waitText(".pager", "Page 1 of 2 (23 in all)")
	p.do("next page", chromedp.Click(chromedp.CSS(".pager button:last-child")))
	p.waitText(".pager", "Page 2 of 2")
	p.waitText("#users", "carol") // the oldest: root, carol, bob on the second page
	p.do("search", chromedp.SendKeys(chromedp.CSS(`form.search input`), "bob"),
		chromedp.Click(chromedp.CSS(`form.search button`)))
	// The search answer replaces the list: root and carol leave it.
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`document.querySelectorAll('#users tbody tr').length === 1 &&
		!!document.querySelector('tr[data-user="bob"]')`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("the search for bob never showed bob alone: %v", err)
	}
	p.click(`tr[data-user="bob"] button.topup`)
	p.waitText("#topup-title", "Top up bob")
	// A deduction beyond the balance is refused with the server's message.
	p.do("deduct too much",
		chromedp.SendKeys(chromedp.CSS(`#topup-form input[name="amount"]`), "-100"),
		chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#topup-form [role=alert]", "the deduction exceeds the user's balance")
	p.fill(`#topup-form input[name="amount"]`, "")
	p.do("fill the top-up",
		chromedp.SendKeys(chromedp.CSS(`#topup-form input[name="amount"]`), "12.5"),
		chromedp.SendKeys(chromedp.CSS(`#topup-form textarea[name="remark"]`), "browser remark"),
		chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#toasts", "credited to bob")
	p.waitText(`tr[data-user="bob"] .balance`, "¥12.50")
	p.screenshot("admin-users")
	self := bobSelf(t, bob)
	if self.Quota != 12_500_000 {
		t.Errorf("bob's balance = %d, want 12500000", self.Quota)
	}
	if logs := e.Root().OK("GET", apptest.Path("/api/log/?user_id=%d&page_size=100", bobID), nil); !strings.Contains(string(logs.Raw), "browser remark") {
		t.Errorf("no log carries the remark: %s", logs.Raw)
	}

	p.do("disable bob", chromedp.Click(chromedp.CSS(`tr[data-user="bob"] td.actions button:first-child`)))
	p.waitText(`tr[data-user="bob"]`, "Disabled")
	if r := bob.Do("GET", "/api/user/self", nil); r.Success {
		t.Error("a disabled user's session still works")
	}
	p.do("enable bob", chromedp.Click(chromedp.CSS(`tr[data-user="bob"] td.actions button:first-child`)))
	p.waitText(`tr[data-user="bob"]`, "Enabled")
	bob = e.Client()
	bob.Login("bob", "password-bob")

	p.click(`#nav-admin a[href="/admin/redemptions"]`)
	p.waitText("h1", "Redemption codes")
	p.do("batch create",
		chromedp.SendKeys(chromedp.CSS(`#codes-form input[name="name"]`), "batch"),
		chromedp.SendKeys(chromedp.CSS(`#codes-form input[name="amount"]`), "3"))
	p.fill(`#codes-form input[name="count"]`, "5")
	p.click(`#codes-form button[type="submit"]`)
	p.waitText("#created-codes", "5 codes of 3 CNY")
	p.waitText("#toasts", "5 codes of 3 CNY")
	codes := strings.Fields(p.text("#created-codes pre"))
	if len(codes) != 5 || len(codes[0]) != 32 {
		t.Fatalf("created codes %q, want 5 of 32 characters", codes)
	}
	p.do("copy all", chromedp.Click(chromedp.CSS("#created-codes .actions button:first-child")))
	p.waitText("#created-codes", "Copied")
	if got := eval[string](p, `navigator.clipboard.readText()`); strings.Fields(got)[4] != codes[4] || len(strings.Fields(got)) != 5 {
		t.Errorf("clipboard = %q, want the 5 codes", got)
	}
	p.waitText("#codes", codes[0])
	p.screenshot("admin-redemptions")

	r := bob.OK("POST", "/api/user/topup", map[string]any{"key": codes[2]})
	var credited int64
	_ = json.Unmarshal(r.Data, &credited)
	if credited != 3_000_000 || bobSelf(t, bob).Quota != 15_500_000 {
		t.Errorf("redeemed %d, balance %d; want 3000000 and 15500000", credited, bobSelf(t, bob).Quota)
	}
	p.do("reload", chromedp.Reload())
	p.waitText("#codes", "Used")

	// The CSV quotes every cell and defuses formulas.
	if got := eval[string](p, `import('/js/pages/redemptions.js').then((m) => m.csv([['=1+1', 'a"b']]))`); got != "\"'=1+1\",\"a\"\"b\"\r\n" {
		t.Errorf("csv = %q", got)
	}

	p.click(`#nav-admin a[href="/admin/nodes"]`)
	p.waitText("h1", "Cluster nodes")
	p.waitText("[role=alert]", "cluster mode is off")
	p.screenshot("admin-nodes-off")

	// Every administration page in Chinese: no label missing.
	p.choose("#lang", "zh")
	for _, pg := range []struct{ path, h1 string }{
		{"/admin/users", "用户"}, {"/admin/channels", "渠道"}, {"/admin/prices", "价格"},
		{"/admin/redemptions", "兑换码管理"}, {"/admin/nodes", "集群节点"},
	} {
		p.visit(`#nav-admin a[href="`+pg.path+`"]`, pg.h1)
	}
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

func bobSelf(t *testing.T, c *apptest.Client) apptest.UserInfo {
	t.Helper()
	var u apptest.UserInfo
	c.OK("GET", "/api/user/self", nil).Decode(t, &u)
	return u
}

// In cluster mode root sees the peer, pings it (the round trip, then the
// failure while the peer is down, counted), disables and enables it; an
// admin sees the admin pages its role opens and not the root ones.
func TestBrowserClusterNodesAndAdminNavigation(t *testing.T) {
	p := newPage(t)
	nodes := apptest.NewCluster(t, 2)
	p.login(nodes[0].Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/nodes"]`)
	p.waitText("h1", "Cluster nodes")
	row := `#nodes tbody tr:first-child`
	p.waitText(row, "node-2")
	p.click(row + ` td.actions button:first-child`)
	p.waitText(row+" .test-result.ok", "Answered in")
	if got := p.text(row + " td:nth-child(5)"); got == "Never" {
		t.Error("the heartbeat is not shown after a ping")
	}
	nodes[1].Pause()
	p.click(row + ` td.actions button:first-child`)
	p.waitText(row+" .test-result.error", "No answer:")
	p.waitText(row+" td:nth-child(6)", "1")
	nodes[1].Resume()
	p.screenshot("admin-nodes")

	p.click(row + ` td.actions button:nth-child(2)`)
	p.waitText(row, "Disabled")
	var table []struct {
		NodeID   int  `json:"node_id"`
		Disabled bool `json:"disabled"`
	}
	nodes[0].Root().OK("GET", "/api/cluster_node/", nil).Decode(t, &table)
	if len(table) != 1 || table[0].NodeID != 2 || !table[0].Disabled {
		t.Errorf("the server's node table after disable: %+v", table)
	}
	p.click(row + ` td.actions button:nth-child(2)`)
	p.waitText(row+` td.actions button:nth-child(2)`, "Disable")

	// An admin: users, channels and codes; not prices or nodes (root).
	nodes[0].NewUser("ada", 10)
	p.do("log out", chromedp.Click(chromedp.CSS("#logout")))
	p.waitText("h1", "Log in")
	p.login(nodes[0].Server.URL, "ada", "password-ada")
	p.waitText("#nav-admin", "Redemption codes")
	for _, path := range []string{"/admin/prices", "/admin/nodes"} {
		if n := eval[int](p, `document.querySelectorAll('#nav-admin a[href="`+path+`"]').length`); n != 0 {
			t.Errorf("an admin sees %s", path)
		}
	}
	p.click(`#nav-admin a[href="/admin/users"]`)
	p.waitText("#users", "ada")
	// An admin manages users but grants no roles: no promote button.
	if n := eval[int](p, `[...document.querySelectorAll('#users button')].filter((b) => b.innerText === 'Make admin').length`); n != 0 {
		t.Error("an admin is offered to promote")
	}
}
