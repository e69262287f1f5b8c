package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// hanJS counts the Chinese characters in the text of the element sel.
func hanJS(sel string) string {
	return `((document.querySelector(` + quote(sel) + `) || {}).innerText || '').match(/[\u4e00-\u9fff]/g)?.length || 0`
}

// waitJS waits until the expression is true.
func (p *page) waitJS(what, js string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		got, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		p.t.Fatalf("%s never held; the page reads:\n%s", what, got)
	}
}

// Issue 30 §2: in English the logs (a relay call's prices, a redemption,
// an admin's top-up) and the bank's instructions show no Chinese server
// text, amounts in CNY and dates in the English format; switched to
// Chinese, the same rows and instructions come back in Chinese and the
// dates in the Chinese format, without a reload.
func TestBrowserServerTextInReadersLanguage(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "lin"})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test")); r.Status != 200 {
		t.Fatalf("relay call = %d %s", r.Status, r.Body)
	}
	e.SettleAll()
	var keys []string
	g.Root.OK("POST", "/api/redemption/", map[string]any{"name": "lang", "quota": 5_000_000, "count": 1}).Decode(t, &keys)
	g.User.OK("POST", "/api/user/topup", map[string]string{"key": keys[0]})
	enableBank(g.Root)
	g.Root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 10_000_000}}})

	p.login(e.Server.URL, "lin", "password-lin")
	p.do("open the logs", chromedp.Click(chromedp.CSS(`#nav-user a[href="/logs"]`)))
	p.waitText("h1", "Logs")
	p.waitText("#logs tbody", "Topped up ¥5.00 with a redemption code")
	p.waitText("#logs tbody", "input ¥")
	if n := eval[int](p, hanJS("#logs tbody")); n != 0 {
		t.Errorf("the English logs hold %d Chinese characters:\n%s", n, p.text("#logs tbody"))
	}
	// en-US dates: "11/27/2026, 3:04:05 PM".
	p.waitJS("an English date", `/^\d{1,2}\/\d{1,2}\/\d{4}, \d{1,2}:\d{2}:\d{2}\s?[AP]M$/.test(document.querySelector('#logs tbody td').innerText.trim())`)

	p.do("open top-up", chromedp.Click(chromedp.CSS(`#nav-user a[href="/topup"]`)))
	p.waitText("#topup-form", "¥10.00")
	p.do("order by bank", chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#pay-result .note", "Account name: Example Ltd; account number: 6222 0000 1111")
	if n := eval[int](p, hanJS("#pay-result")); n != 0 {
		t.Errorf("the English bank instructions hold %d Chinese characters:\n%s", n, p.text("#pay-result"))
	}

	p.choose("#lang", "zh")
	p.do("open the logs", chromedp.Click(chromedp.CSS(`#nav-user a[href="/logs"]`)))
	p.waitText("h1", "日志")
	p.waitText("#logs tbody", "通过兑换码充值 ¥5.00")
	p.waitText("#logs tbody", "输入 ")
	if got := p.text("#logs tbody"); strings.Contains(got, "Topped up") || strings.Contains(got, "input ¥") {
		t.Errorf("the Chinese logs hold English server text:\n%s", got)
	}
	// zh-CN dates: "2026/11/27 15:04:05".
	p.waitJS("a Chinese date", `/^\d{4}\/\d{1,2}\/\d{1,2} \d{1,2}:\d{2}:\d{2}$/.test(document.querySelector('#logs tbody td').innerText.trim())`)
	p.do("open top-up", chromedp.Click(chromedp.CSS(`#nav-user a[href="/topup"]`)))
	p.waitText("#topup-form", "¥10.00")
	p.do("order by bank", chromedp.Click(chromedp.CSS(`#topup-form button[type="submit"]`)))
	p.waitText("#pay-result .note", "户名:Example Ltd;账号:6222 0000 1111")
}
