package web_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Root changes a runtime option (a refused value shows the server's
// message) and a top-up preset through the settings pages, and the API
// agrees; a PEM file loaded into Alipay's private key is saved and read back
// masked; the overview's top users list a user who made a relay call. Every
// new page in Chinese with no label missing.
func TestBrowserRootSettingsOptionsAndTopUsers(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "dave"})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test")); r.Status != 200 {
		t.Fatalf("relay call = %d %s", r.Status, r.Body)
	}
	p.login(e.Server.URL, "root", apptest.RootPassword)

	// Top users: dave made one call.
	p.click(`#nav-admin a[href="/admin"]`)
	p.waitText("h1", "Overview")
	p.waitText(`#top-users tr[data-user="dave"] .requests`, "1")
	waitChartPixels(p, "#overview-chart-models", "--chart-1", 200)
	if os.Getenv("MODELGATE_CONSOLE_DOC_SHOTS") == "1" { // the counts and the charts in one viewport
		eval[bool](p, `(() => { document.querySelector('main h1').scrollIntoView(); return true; })()`)
		docShot(p, "console-admin-overview")
	}
	p.choose("#range", "today")
	p.waitText(`#top-users tr[data-user="dave"]`, "dave")
	p.screenshot("admin-overview-top-users")

	// Runtime options: a refused value shows the server's message, a valid one is saved.
	p.click(`#nav-admin a[href="/admin/options"]`)
	p.waitText("h1", "Runtime options")
	p.waitText(`#options tr[data-option="RetryTimes"] .value`, "2")
	p.click(`#options tr[data-option="RetryTimes"] button`)
	p.fill("#option-RetryTimes", "99")
	p.click(`#options button[form="option-form"]`)
	p.waitText(`#options tr[data-option="RetryTimes"] [role=alert]`, "invalid value for option RetryTimes")
	p.fill("#option-RetryTimes", "4")
	p.click(`#options button[form="option-form"]`)
	p.waitText("#toasts", "RetryTimes saved")
	p.waitText(`#options tr.saved[data-option="RetryTimes"] .value`, "4")
	p.waitText("[role=status]", "RetryTimes saved")
	p.screenshot("admin-options")
	if got := optionValue(t, e.Root(), "RetryTimes"); got != "4" {
		t.Errorf("RetryTimes on the server = %q, want 4", got)
	}

	// Top-up settings: open top-up, add a preset of 25 CNY with a bonus.
	p.click(`#nav-admin a[href="/admin/settings"]`)
	p.waitText("h1", "Top-up and payment")
	p.waitText("#topup-settings", "Top-up settings")
	p.click(`#topup-settings input[name="enabled"]`)
	p.fill(`#topup-settings input[name="exchange_rate"]`, "1000000")
	p.click("#preset-add")
	p.fill(`#topup-settings [data-preset="0"] input[name="amount"]`, "25")
	p.fill(`#topup-settings [data-preset="0"] input[name="bonus_quota"]`, "500000")
	// ¥25 that credits ¥0.50: shown beside the price, and warned.
	p.waitText(`#topup-settings [data-credit="0"]`, "credits ¥0.50 for ¥25.00")
	p.waitText("#topup-warnings", "Preset 1 sells for ¥25.00 but credits only ¥0.50.")
	p.click(`#topup-settings button[type="submit"]`)
	// The save went through, but warns: not a plain success.
	p.waitText("#topup-settings .alert.warn[role=status]", "saved")
	// The server's warning is in the page's language (issue 30 §2): no
	// Chinese on the English page, and Chinese once the page is.
	const warnSel = "#topup-settings .alert.warn[role=status]"
	if n := eval[int](p, hanJS(warnSel)); n != 0 {
		t.Errorf("the English page's save warning holds %d Chinese characters: %s", n, p.text(warnSel))
	}
	p.choose("#lang", "zh")
	p.waitText("h1", "充值")
	p.waitText("#topup-warnings", "快捷金额 1")
	// By script: the first save's toast may still cover the button.
	p.do("save again", chromedp.Evaluate[chromedp.Void](`document.querySelector('#topup-settings button[type="submit"]').click()`))
	p.waitJS("a Chinese save warning", `(`+hanJS(warnSel)+`) > 0`)
	if got := p.text(warnSel); strings.Contains(got, "saved") {
		t.Errorf("the Chinese page's save warning is English: %s", got)
	}
	p.choose("#lang", "en")
	p.waitText("h1", "Top-up and payment")
	p.waitText("#topup-warnings", "Preset 1 sells for ¥25.00")
	var topup struct {
		Enabled      bool  `json:"enabled"`
		ExchangeRate int64 `json:"exchange_rate"`
		Presets      []struct {
			Amount     float64 `json:"amount"`
			BonusQuota int64   `json:"bonus_quota"`
		} `json:"presets"`
	}
	e.Root().OK("GET", "/api/setting/topup", nil).Decode(t, &topup)
	if !topup.Enabled || topup.ExchangeRate != 1000000 || len(topup.Presets) != 1 || topup.Presets[0].Amount != 25 || topup.Presets[0].BonusQuota != 500000 {
		t.Errorf("top-up settings on the server = %+v", topup)
	}
	// One click credits the price: 25 × 1000000; the warning goes.
	p.click(`#topup-settings [data-preset="0"] .preset-fill`)
	p.waitText(`#topup-settings [data-credit="0"]`, "credits ¥25.00 for ¥25.00")
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`document.querySelector('#topup-settings [data-preset="0"] input[name="bonus_quota"]').value === '25000000' && document.querySelector('#topup-warnings').hidden`)); err != nil {
		t.Fatalf("credit the price did not fill 25000000 and clear the warning: %v", err)
	}
	p.click(`#topup-settings button[type="submit"]`)
	p.waitText("#topup-settings .alert.ok[role=status]", "saved")
	p.waitText("#toasts", "Top-up settings saved.")
	e.Root().OK("GET", "/api/setting/topup", nil).Decode(t, &topup)
	if len(topup.Presets) != 1 || topup.Presets[0].BonusQuota != 25000000 {
		t.Errorf("top-up settings on the server after credit the price = %+v", topup)
	}

	// A PEM file fills Alipay's private key; saving masks it.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	file := filepath.Join(t.TempDir(), "app_private_key.pem")
	if err := os.WriteFile(file, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	p.do("choose the PEM file", chromedp.SetUploadFiles(chromedp.CSS(`#pay-mobile_b input[name="private_key_upload"]`), []string{file}))
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`document.querySelector('#pay-mobile_b textarea[name="private_key"]').value.includes('BEGIN RSA PRIVATE KEY')`)); err != nil {
		t.Fatalf("the PEM file never filled the field: %v", err)
	}
	p.fill(`#pay-mobile_b input[name="app_id"]`, "2021000000000001")
	p.click(`#pay-mobile_b button[type="submit"]`)
	p.waitText("#pay-mobile_b [role=status]", "")
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`document.querySelector('#pay-mobile_b textarea[name="private_key"]').value === '******'`)); err != nil {
		t.Fatalf("the saved key is not shown masked: %v", err)
	}
	p.screenshot("admin-settings")
	pay := e.Root().OK("GET", "/api/setting/payment", nil)
	if strings.Contains(string(pay.Raw), "PRIVATE KEY") || !strings.Contains(string(pay.Raw), "2021000000000001") {
		t.Errorf("payment settings on the server: %s", pay.Raw)
	}
	if body := eval[string](p, `document.body.innerText`); strings.Contains(body, "PRIVATE KEY") {
		t.Error("the page still shows the private key after saving")
	}

	// Every new page in Chinese: no label missing.
	p.choose("#lang", "zh")
	for _, pg := range []struct{ path, h1 string }{
		{"/admin/settings", "充值与支付"}, {"/admin/options", "运行配置"}, {"/admin", "总览"},
	} {
		p.click(`#nav-admin a[href="` + pg.path + `"]`)
		p.waitText("h1", pg.h1)
	}
	p.waitText("#top-users-title", "排行")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

func optionValue(t *testing.T, root *apptest.Client, key string) string {
	t.Helper()
	for _, o := range apptest.OKData[[]struct{ Key, Value string }](root, "GET", "/api/option/", nil) {
		if o.Key == key {
			return o.Value
		}
	}
	t.Fatalf("no option %s", key)
	return ""
}

// docShot writes the README's screenshot docs/<name>.png (viewport only, to
// stay small) when MODELGATE_CONSOLE_DOC_SHOTS=1; normal runs write nothing
// into the repository.
func docShot(p *page, name string) {
	p.t.Helper()
	if os.Getenv("MODELGATE_CONSOLE_DOC_SHOTS") != "1" {
		return
	}
	buf, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	file := filepath.Join("..", "docs", name+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("doc screenshot %s (%d bytes)", file, len(buf))
}
