package web_test

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// Root reads the audit trail on /admin/audit: the actions made before (a
// channel with a key, an option) are listed with who made them, and no
// key is on the page; the action filter narrows the list.
func TestBrowserRootReadsTheAuditTrail(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("POST", "/api/channel/", map[string]any{"name": "audited-channel", "key": "sk-browser-secret-key", "base_url": "http://127.0.0.1:1", "models": "m"})
	root.OK("PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "Audit Gate"})

	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/audit"]`)
	p.waitText("h1", "Audit trail")
	p.waitText("#audit-log", "PUT /api/option/")
	p.waitText("#audit-log", "option:SystemName")
	p.waitText("#audit-log", "POST /api/channel/")
	if html := eval[string](p, `document.body.innerHTML`); strings.Contains(html, "sk-browser-secret-key") {
		t.Error("the audit page shows a channel key")
	}
	p.fill(`#audit-filters input[name="action"]`, "option")
	p.click(`#audit-filters button[type="submit"]`)
	p.waitText(".pager", "(1 in all)")
}
