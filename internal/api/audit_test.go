package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
)

type auditInfo struct {
	ID        int64          `json:"id"`
	CreatedAt int64          `json:"created_at"`
	UserID    int64          `json:"user_id"`
	Username  string         `json:"username"`
	IP        string         `json:"ip"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	Detail    map[string]any `json:"detail"`
}

func auditEntries(t *testing.T, c *apptest.Client, query string) ([]auditInfo, *apptest.Response) {
	t.Helper()
	r := c.OK("GET", "/api/audit/"+query, nil)
	var rows []auditInfo
	r.Decode(t, &rows)
	return rows, r
}

// TestAuditRecordsAdminActionsWithoutSecrets: every successful admin write
// is in GET /api/audit/ with who, where from, what, the target and a
// detail holding before and after; keys, passwords and secret options
// appear nowhere; a refused action and a read are not recorded.
func TestAuditRecordsAdminActionsWithoutSecrets(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	secrets := []string{"sk-audit-very-secret-1", "sk-audit-very-secret-2", "password-of-zed", "smtp-pass-word", "new-pw-of-zed-1"}

	ch := createChannel(t, root, map[string]any{"name": "audited", "key": secrets[0], "base_url": "http://127.0.0.1:1", "models": "gpt-4o"})
	root.OK("PUT", "/api/channel/", map[string]any{"id": ch.ID, "name": "renamed", "key": secrets[1]})
	var zed apptest.UserInfo
	root.OK("POST", "/api/user/", map[string]any{"username": "zed", "password": secrets[2]}).Decode(t, &zed)
	root.OK("PUT", "/api/user/", map[string]any{"id": zed.ID, "username": "zed", "password": secrets[4], "display_name": "Zed"})
	root.OK("POST", "/api/topup", map[string]any{"user_id": zed.ID, "quota": 5000, "remark": "gift"})
	root.OK("PUT", "/api/option/", map[string]any{"key": "SMTPToken", "value": secrets[3]})
	root.OK("PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "Audited Gate"})
	root.OK("DELETE", apptest.Path("/api/channel/%d", ch.ID), nil)
	// Refused and read-only calls are not actions.
	root.Fail("PUT", "/api/channel/", map[string]any{"id": 999999, "name": "x"}, http.StatusOK, "")
	root.OK("GET", "/api/channel/", nil)

	rows, r := auditEntries(t, root, "?page_size=100")
	for _, s := range secrets {
		if strings.Contains(string(r.Raw), s) {
			t.Errorf("the audit trail holds the secret %q: %s", s, r.Raw)
		}
	}
	want := []struct{ action, target string }{
		{"DELETE /api/channel/{id}", fmt.Sprintf("channel:%d", ch.ID)},
		{"PUT /api/option/", "option:SystemName"},
		{"PUT /api/option/", "option:SMTPToken"},
		{"POST /api/topup", fmt.Sprintf("user:%d", zed.ID)},
		{"PUT /api/user/", fmt.Sprintf("user:%d", zed.ID)},
		{"POST /api/user/", "user:zed"},
		{"PUT /api/channel/", fmt.Sprintf("channel:%d", ch.ID)},
		{"POST /api/channel/", ""},
	}
	if len(rows) != len(want) || r.Total != int64(len(want)) {
		t.Fatalf("got %d entries (total %d), want %d: %s", len(rows), r.Total, len(want), r.Raw)
	}
	for i, w := range want {
		got := rows[i]
		if got.Action != w.action || got.Target != w.target || got.Username != "root" || got.UserID == 0 ||
			got.IP != "127.0.0.1" || got.CreatedAt == 0 {
			t.Errorf("entry %d = %+v, want %s on %q by root from 127.0.0.1", i, got, w.action, w.target)
		}
	}
	// The channel update shows the row before (old name) and after (new).
	upd := rows[6].Detail
	before, _ := upd["before"].(map[string]any)
	after, _ := upd["after"].(map[string]any)
	if before["name"] != "audited" || after["name"] != "renamed" {
		t.Errorf("channel update detail = %v", upd)
	}
	// A plain option's old and new values are there; the secret one masked.
	if b, _ := rows[1].Detail["request"].(map[string]any); b["value"] != "Audited Gate" {
		t.Errorf("option detail = %v", rows[1].Detail)
	}
	if b, _ := rows[2].Detail["request"].(map[string]any); b["value"] != "***" {
		t.Errorf("secret option detail = %v", rows[2].Detail)
	}
	if b, _ := rows[4].Detail["before"].(map[string]any); b["display_name"] == "Zed" || b["username"] != "zed" {
		t.Errorf("user update before = %v", rows[4].Detail)
	}

	// Filters and paging.
	got, r := auditEntries(t, root, "?action=channel&page_size=2")
	if len(got) != 2 || r.Total != 3 || got[0].Action != "DELETE /api/channel/{id}" {
		t.Errorf("action filter: %d rows, total %d: %s", len(got), r.Total, r.Raw)
	}
	got, _ = auditEntries(t, root, "?action=channel&page_size=2&p=1")
	if len(got) != 1 || got[0].Action != "POST /api/channel/" {
		t.Errorf("page 2: %+v", got)
	}
	got, _ = auditEntries(t, root, apptest.Path("?target=user:%d", zed.ID))
	if len(got) != 2 {
		t.Errorf("target filter: %+v", got)
	}
	got, _ = auditEntries(t, root, "?username=nobody")
	if len(got) != 0 {
		t.Errorf("username filter: %+v", got)
	}
	root.Fail("GET", "/api/audit/?user_id=x", nil, http.StatusOK, "")

	// Admins act and are recorded, but only root reads the trail.
	admin, _ := e.NewUser("ada", 10)
	admin.Fail("GET", "/api/audit/", nil, http.StatusOK, api.MsgNoPermission)
	admin.OK("POST", "/api/redemption/", map[string]any{"name": "codes", "count": 2, "quota": 100})
	got, _ = auditEntries(t, root, "?username=ada")
	if len(got) != 1 || got[0].Action != "POST /api/redemption/" {
		t.Errorf("admin's action: %+v", got)
	}
	if raw, _ := json.Marshal(got); strings.Contains(string(raw), "after") {
		t.Errorf("generated codes must not be kept: %s", raw)
	}
}

// TestAuditRetention: the log retention sweep deletes audit entries older
// than LogRetentionDays, and keeps the newer ones.
func TestAuditRetention(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "LogRetentionDays", "value": "2"})
	n := func() int64 {
		_, r := auditEntries(t, root, "")
		return r.Total
	}
	if got := n(); got != 1 {
		t.Fatalf("entries = %d, want 1", got)
	}
	if _, err := e.App.SweepLogs(context.Background(), time.Now().Add(47*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := n(); got != 1 {
		t.Fatalf("within retention: entries = %d, want 1", got)
	}
	if _, err := e.App.SweepLogs(context.Background(), time.Now().Add(49*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := n(); got != 0 {
		t.Fatalf("past retention: entries = %d, want 0", got)
	}
}
