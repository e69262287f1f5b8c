package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser: $MODELGATE_CHROMIUM, /usr/bin/chromium, or
// chromium on PATH; "" when there is none.
func chromiumPath() string {
	if p := os.Getenv("MODELGATE_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// page is one headless Chromium tab for a test.
type page struct {
	t   *testing.T
	ctx context.Context
}

// browser is the package's one Chromium: starting a browser costs about
// as much CPU as a short test, so the tests share one and each page opens
// in its own browser context (cookies, storage and permissions apart, as
// in a fresh profile). TestMain closes it.
var browser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab
	cancel func()
	err    error
}

// TestMain runs the package's tests and then closes the shared browser.
func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// startBrowser starts the shared Chromium (English, a desktop-sized window)
// on the first call.
func startBrowser(path string) (context.Context, error) {
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // CI runs as root, where the sandbox cannot start
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("lang", "en-US"),
			chromedp.WindowSize(1280, 900),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(actx)
		browser.ctx = ctx
		browser.cancel = func() { cancelCtx(); cancelAlloc() }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	return browser.ctx, browser.err
}

// newPage opens a tab in a new browser context of the shared Chromium; the
// browser tests skip when Chromium is not installed, so `go test ./...`
// passes without it (.ci/run installs it).
func newPage(t *testing.T) *page {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("Chromium is not installed (apt-get install chromium, or set MODELGATE_CHROMIUM): browser tests skipped")
	}
	bctx, err := startBrowser(path)
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	ctx, cancelCtx := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 180*time.Second) // a hang, not a slow machine
	t.Cleanup(func() { cancelTimeout(); cancelCtx() })
	p := &page{t: t, ctx: ctx}
	p.do("open a tab") // creates the browser context now: grantClipboard needs its id
	return p
}

// do runs actions and fails the test on the first error.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// text is the visible text of the first element matching the CSS selector,
// once it is visible.
func (p *page) text(sel string) string {
	p.t.Helper()
	p.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitText waits until the element's text contains want.
func (p *page) waitText(sel, want string) {
	p.t.Helper()
	js := `(() => { const e = document.querySelector(` + quote(sel) + `); return !!e && e.innerText.includes(` + quote(want) + `); })()`
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		got, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		p.t.Fatalf("%s never showed %q; the page reads:\n%s", sel, want, got)
	}
}

// eval runs JavaScript (awaiting a promise) and decodes its value.
func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("eval %s: %v", js, err)
	}
	return v
}

// choose selects value in a <select> as a user would (change event).
func (p *page) choose(sel, value string) {
	p.t.Helper()
	eval[bool](p, `(() => { const s = document.querySelector(`+quote(sel)+`); s.value = `+quote(value)+
		`; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
}

// grantClipboard lets the page write and read the clipboard, so the copy
// button can be checked against what it copied.
func (p *page) grantClipboard(origin string) {
	p.t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(p.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true},
			Setting:    cdpbrowser.PermissionSettingGranted, Origin: origin,
			BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID})
		if err != nil {
			p.t.Fatalf("grant %s: %v", name, err)
		}
	}
}

// screenshot writes the page as name.png to the artifacts directory:
// $MODELGATE_TEST_ARTIFACTS, or modelgate-console under the system temp dir.
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("MODELGATE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "modelgate-console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100)) // 100 gives PNG, less JPEG
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", file)
}

// login fills the login form and waits for the dashboard.
func (p *page) login(base, username, password string) {
	p.t.Helper()
	p.do("open the console", chromedp.Navigate(base+"/"))
	p.waitText("h1", "Log in")
	p.do("log in",
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), username),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
	)
	p.waitText("h1", "Dashboard")
}

// missingLabels are the labels the pages asked for that a language lacks.
func (p *page) missingLabels() []string {
	p.t.Helper()
	return eval[[]string](p, `import('/js/i18n.js').then((m) => m.missingLabels())`)
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
