package web_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
)

type tierRow struct {
	Above        int64   `json:"above_prompt_tokens"`
	Input        float64 `json:"input_price"`
	Output       float64 `json:"output_price"`
	Cached       float64 `json:"cached_price"`
	CacheWrite   float64 `json:"cache_write_price"`
	CacheWrite1h float64 `json:"cache_write_1h_price"`
}

type priceRow struct {
	ID           int64     `json:"id"`
	ModelName    string    `json:"model_name"`
	Input        float64   `json:"input_price"`
	Output       float64   `json:"output_price"`
	CacheWrite   float64   `json:"cache_write_price"`
	CacheWrite1h float64   `json:"cache_write_1h_price"`
	Tiers        []tierRow `json:"tiers"`
}

func modelPrice(t *testing.T, root *apptest.Client, model string) priceRow {
	t.Helper()
	for _, p := range apptest.OKData[[]priceRow](root, "GET", "/api/model_price/", nil) {
		if p.ModelName == model {
			return p
		}
	}
	t.Fatalf("no price for %s", model)
	return priceRow{}
}

// Root sets a model's cache-write prices and a context-length tier on the
// prices page, and the API stores exactly those; tiers out of order show
// the server's refusal as sent; the edit form shows the tier back; a tier
// removed on the page is removed on the server.
func TestBrowserRootPricesCacheWriteAndTiers(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/prices"]`)
	p.waitText("h1", "Prices")

	p.click("#model-price-new")
	p.fill(`#model-price-form input[name="model_name"]`, "claude-test")
	p.fill(`#model-price-form input[name="input_price"]`, "3")
	p.fill(`#model-price-form input[name="output_price"]`, "15")
	p.fill(`#model-price-form input[name="cache_write_price"]`, "3.75")
	p.fill(`#model-price-form input[name="cache_write_1h_price"]`, "6")
	p.waitText("#price-tiers", "No tiers")
	p.click("#tier-add")
	p.fill(`#price-tiers [data-tier="0"] input[name="above_prompt_tokens"]`, "200000")
	p.fill(`#price-tiers [data-tier="0"] input[name="input_price"]`, "6")
	p.fill(`#price-tiers [data-tier="0"] input[name="output_price"]`, "22.5")
	p.fill(`#price-tiers [data-tier="0"] input[name="cache_write_price"]`, "7.5")
	// A second tier below the first: the server refuses the order.
	p.click("#tier-add")
	p.fill(`#price-tiers [data-tier="1"] input[name="above_prompt_tokens"]`, "100000")
	p.click(`#model-price-form button[type="submit"]`)
	p.waitText("#model-price-form [role=alert]", "tier above_prompt_tokens values must be in ascending order without repeats")
	p.screenshot("admin-prices-tiers")
	p.click(`#price-tiers [data-tier="1"] .remove-tier`)
	p.click(`#model-price-form button[type="submit"]`)
	p.waitText(`#model-prices tr[data-model="claude-test"] .cache-write`, "3.75")
	p.waitText(`#model-prices tr[data-model="claude-test"] .tiers`, "200")

	got := modelPrice(t, e.Root(), "claude-test")
	want := []tierRow{{Above: 200000, Input: 6, Output: 22.5, CacheWrite: 7.5}}
	if got.Input != 3 || got.Output != 15 || got.CacheWrite != 3.75 || got.CacheWrite1h != 6 ||
		len(got.Tiers) != 1 || got.Tiers[0] != want[0] {
		t.Errorf("the stored price = %+v, want cache writes 3.75 / 6 and tiers %+v", got, want)
	}

	// The edit form shows the tier back; removing it removes it on the server.
	p.click(`#model-prices tr[data-model="claude-test"] td.actions button:nth-child(2)`)
	p.waitText("#mpform-title", "Edit")
	if v := eval[string](p, `document.querySelector('#price-tiers [data-tier="0"] input[name="above_prompt_tokens"]').value`); v != "200000" {
		t.Errorf("the edit form's tier starts at %q, want 200000", v)
	}
	if v := eval[string](p, `document.querySelector('#model-price-form input[name="cache_write_1h_price"]').value`); v != "6" {
		t.Errorf("the edit form's 1-hour cache write = %q, want 6", v)
	}
	p.click(`#price-tiers [data-tier="0"] .remove-tier`)
	p.click(`#model-price-form button[type="submit"]`)
	p.do("wait for the form to close", chromedp.WaitNotPresent(chromedp.CSS("#model-price-form")))
	if got := modelPrice(t, e.Root(), "claude-test"); len(got.Tiers) != 0 || got.CacheWrite != 3.75 {
		t.Errorf("after removing the tier the stored price = %+v", got)
	}

	// In Chinese: the new fields and the tier table, no label missing.
	p.choose("#lang", "zh")
	p.click(`#model-prices tr[data-model="claude-test"] td.actions button:nth-child(2)`)
	p.waitText("#model-price-form", "上下文分档")
	p.click("#tier-add")
	p.waitText("#price-tiers", "提示超过")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}

// writeCertAndKey writes a self-signed certificate and its private key as
// PEM files, as WeChat Pay's merchant certificate would be.
func writeCertAndKey(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "merchant"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "apiclient_cert.pem"), filepath.Join(dir, "apiclient_key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Root uploads WeChat Pay's certificate and key files on the settings page
// (the API's multipart form): the stored paths are shown read-only and
// agree with the API, the files on disk are what was chosen, and a file
// that is not PEM shows the server's message as sent and changes nothing.
func TestBrowserRootUploadsWeChatCertificates(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	dir := t.TempDir()
	certFile, keyFile := writeCertAndKey(t, dir)
	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/settings"]`)
	p.waitText("h1", "Top-up and payment")
	p.waitText(`#pay-mobile_a [data-file="cert_file"] .stored-path`, "none")

	p.fill(`#pay-mobile_a input[name="app_id"]`, "wx0000000000000001")
	p.fill(`#pay-mobile_a input[name="mch_id"]`, "1900000001")
	p.do("choose the files",
		chromedp.SetUploadFiles(chromedp.CSS(`#pay-mobile_a input[name="cert_file"]`), []string{certFile}),
		chromedp.SetUploadFiles(chromedp.CSS(`#pay-mobile_a input[name="key_file"]`), []string{keyFile}))
	p.click(`#pay-mobile_a button[type="submit"]`)
	p.waitText("#pay-mobile_a [role=status]", "payment channel saved")
	p.waitText(`#pay-mobile_a [data-file="cert_file"] .stored-path`, "mobile_a-cert_file-")
	p.waitText(`#pay-mobile_a [data-file="key_file"] .stored-path`, "mobile_a-key_file-")
	p.screenshot("admin-settings-wechat-certs")
	if os.Getenv("MODELGATE_CONSOLE_DOC_SHOTS") == "1" { // WeChat Pay's form with its stored files, without the saved notice
		p.do("reload", chromedp.Reload())
		p.waitText(`#pay-mobile_a [data-file="key_file"] .stored-path`, "mobile_a-key_file-")
		eval[bool](p, `(() => { document.querySelector('#pay-mobile_a').scrollIntoView(); return true; })()`)
		docShot(p, "console-admin-settings")
	}

	var channels []struct {
		Method string `json:"method"`
		Config struct {
			AppID    string `json:"app_id"`
			MchID    string `json:"mch_id"`
			CertFile string `json:"cert_file"`
			KeyFile  string `json:"key_file"`
		} `json:"config"`
	}
	e.Root().OK("GET", "/api/setting/payment", nil).Decode(t, &channels)
	var certPath, keyPath string
	for _, c := range channels {
		if c.Method == "mobile_a" {
			certPath, keyPath = c.Config.CertFile, c.Config.KeyFile
			if c.Config.AppID != "wx0000000000000001" || c.Config.MchID != "1900000001" {
				t.Errorf("WeChat config on the server = %+v", c.Config)
			}
		}
	}
	if shown := p.text(`#pay-mobile_a [data-file="cert_file"] .stored-path`); shown != certPath || certPath == "" {
		t.Errorf("the page shows %q, the API %q", shown, certPath)
	}
	for stored, chosen := range map[string]string{certPath: certFile, keyPath: keyFile} {
		got, err := os.ReadFile(stored)
		want, _ := os.ReadFile(chosen)
		if err != nil || string(got) != string(want) {
			t.Errorf("stored file %s differs from %s (%v)", stored, chosen, err)
		}
	}
	if n := eval[int](p, `document.querySelectorAll('#pay-mobile_a .stored-path').length`); n != 2 {
		t.Errorf("%d stored paths shown, want 2", n)
	}
	if ro := eval[bool](p, `!document.querySelector('#pay-mobile_a .stored-path').closest('label, input, textarea')`); !ro {
		t.Error("the stored path is editable")
	}

	// A file that is not PEM: the server's message, the stored paths stay.
	bad := filepath.Join(dir, "not-a-cert.pem")
	if err := os.WriteFile(bad, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.do("choose a bad file", chromedp.SetUploadFiles(chromedp.CSS(`#pay-mobile_a input[name="cert_file"]`), []string{bad}))
	p.click(`#pay-mobile_a button[type="submit"]`)
	p.waitText("#pay-mobile_a [role=alert]", "uploaded file cert_file is not PEM")
	var after []struct {
		Method string `json:"method"`
		Config struct {
			CertFile string `json:"cert_file"`
		} `json:"config"`
	}
	e.Root().OK("GET", "/api/setting/payment", nil).Decode(t, &after)
	for _, c := range after {
		if c.Method == "mobile_a" && c.Config.CertFile != certPath {
			t.Errorf("after the refused upload cert_file = %q, want %q", c.Config.CertFile, certPath)
		}
	}
	if body := eval[string](p, `document.body.innerText`); strings.Contains(body, "PRIVATE KEY") {
		t.Error("the page shows the private key")
	}

	p.choose("#lang", "zh")
	p.waitText(`#pay-mobile_a [data-file="cert_file"]`, "已存文件")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
