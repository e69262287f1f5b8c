package web_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/modelgate/modelgate/internal/apptest"
)

// userRow is the admin view of one user, as GET /api/user/{id} answers.
type userRow struct {
	ID          int64  `json:"id"`
	Username    string `json:"username"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
	Group       string `json:"group"`
	Role        int    `json:"role"`
	Status      int    `json:"status"`
}

// On a fresh gateway root's overview says what to do first (a channel, a
// price, a user) with links there. Root creates a user in /admin/users
// (a duplicate name shows the server's refusal), gives it a new password
// (its old session ends, the new password logs in, the old one not),
// edits its display name, email, group, role and status, and opens its
// logs, orders and subscriptions from the row, each filtered by the user.
// Every save shows a confirmation that stays TOAST_MS (≥ 2 s) and marks
// the row. Every new label exists in Chinese.
func TestBrowserRootCreatesEditsAndResetsAUser(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	root := e.Root()

	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.visit(`#nav-admin a[href="/admin"]`, "Overview")
	p.waitText("#first-run", "Getting started")
	for _, href := range []string{"/admin/channels", "/admin/prices", "/admin/users"} {
		if n := eval[int](p, `document.querySelectorAll('#first-run a[href="`+href+`"]').length`); n != 1 {
			t.Errorf("the first-run card links %s %d times, want once", href, n)
		}
	}
	p.screenshot("admin-first-run")
	if ms := eval[int](p, `import('/js/ui.js').then((m) => m.TOAST_MS)`); ms < 2000 {
		t.Errorf("a confirmation stays %d ms, want at least 2000", ms)
	}

	p.click(`#first-run a[href="/admin/users"]`)
	p.waitText("h1", "Users")
	p.click("#user-new")
	p.waitText("#user-form-title", "New user")
	p.fill(`#user-form input[name="username"]`, "root")
	p.fill(`#user-form input[name="password"]`, "password-dave-1")
	p.fill(`#user-form input[name="group"]`, "default")
	p.click(`#user-form button[type="submit"]`)
	p.waitText("#user-form [role=alert]", "username already taken")

	p.fill(`#user-form input[name="username"]`, "dave")
	p.fill(`#user-form input[name="display_name"]`, "Dave")
	p.fill(`#user-form input[name="email"]`, "dave@example.com")
	p.fill(`#user-form input[name="group"]`, "vip")
	p.click(`#user-form button[type="submit"]`)
	p.waitText("#toasts", "User dave created.")
	p.waitText(`tr.saved[data-user="dave"]`, "dave")
	p.screenshot("admin-user-created")
	dave := apptest.OKData[[]userRow](root, "GET", "/api/user/search?keyword=dave", nil)
	if len(dave) != 1 || dave[0].DisplayName != "Dave" || dave[0].Email != "dave@example.com" || dave[0].Group != "vip" || dave[0].Role != 1 || dave[0].Status != 1 {
		t.Fatalf("dave on the server = %+v", dave)
	}
	id := dave[0].ID
	daveClient := e.Client()
	daveClient.Login("dave", "password-dave-1") // fails the test unless the page's password logs in

	// A new password, generated in the page: the old session ends.
	p.click(`tr[data-user="dave"] button.reset-password`)
	p.waitText("#password-title", "New password for dave")
	p.click("#generate-password")
	password := eval[string](p, `document.querySelector('#password-form input[name="new_password"]').value`)
	if len(password) != 16 {
		t.Fatalf("generated password %q, want 16 characters", password)
	}
	p.click(`#password-form button[type="submit"]`)
	p.waitText("#toasts", "Password of dave changed")
	if r := daveClient.Do("GET", "/api/user/self", nil); r.Status != 401 {
		t.Errorf("dave's session after the reset answers %d, want 401", r.Status)
	}
	if r := e.Client().Do("POST", "/api/user/login", map[string]any{"username": "dave", "password": "password-dave-1"}); r.Success {
		t.Error("the old password still logs in")
	}
	e.Client().Login("dave", password) // fails the test unless the new password logs in

	// Edit: display name, email, group, role (root may grant admin), status.
	p.click(`tr[data-user="dave"] button.edit`)
	p.waitText("#user-form-title", "Edit dave")
	if got := eval[string](p, `document.querySelector('#user-form input[name="email"]').value`); got != "dave@example.com" {
		t.Errorf("the edit form's email = %q", got)
	}
	if n := eval[int](p, `document.querySelectorAll('#user-form select[name="role"] option').length`); n != 2 {
		t.Errorf("root is offered %d roles, want 2 (user, admin)", n)
	}
	p.fill(`#user-form input[name="display_name"]`, "Dave D")
	p.fill(`#user-form input[name="email"]`, "")
	p.fill(`#user-form input[name="group"]`, "default")
	p.choose(`#user-form select[name="role"]`, "10")
	p.choose(`#user-form select[name="status"]`, "2")
	p.click(`#user-form button[type="submit"]`)
	p.waitText("#toasts", "User dave saved.")
	p.waitText(`tr.saved[data-user="dave"]`, "Disabled")
	got := apptest.OKData[userRow](root, "GET", "/api/user/"+strconv.FormatInt(id, 10), nil)
	if got.DisplayName != "Dave D" || got.Email != "" || got.Group != "default" || got.Role != 10 || got.Status != 2 {
		t.Errorf("dave after the edit = %+v", got)
	}

	// The row's links open the other pages filtered by dave.
	p.click(`tr[data-user="dave"] a.user-logs`)
	p.waitText("h1", "All logs")
	if v := eval[string](p, `document.querySelector('#admin-log-filters input[name="username"]').value`); v != "dave" {
		t.Errorf("the logs page's username filter = %q, want dave", v)
	}
	p.do("back", chromedp.NavigateBack())
	p.waitText("h1", "Users")
	p.click(`tr[data-user="dave"] a.user-orders`)
	p.waitText("h1", "All orders")
	if v := eval[string](p, `document.querySelector('#order-filters input[name="user_id"]').value`); v != strconv.FormatInt(id, 10) {
		t.Errorf("the orders page's user filter = %q, want %d", v, id)
	}
	p.do("back", chromedp.NavigateBack())
	p.waitText("h1", "Users")
	p.click(`tr[data-user="dave"] a.user-subs`)
	p.waitText("h1", "All subscriptions")
	if v := eval[string](p, `document.querySelector('form.search input').value`); v != "dave" {
		t.Errorf("the subscriptions page's search = %q, want dave", v)
	}

	// The row's keys link lists the user's keys as their owner sees them:
	// masked (GET /api/user/{id}/tokens).
	erin, _ := e.NewUser("erin", 1)
	k := erin.CreateToken(map[string]any{"name": "erin-key"})
	p.visit(`#nav-admin a[href="/admin/users"]`, "Users")
	p.click(`tr[data-user="erin"] a.user-keys`)
	p.waitText("#user-keys", "erin-key")
	p.waitText("#user-keys", "sk-"+k.Key[3:7])
	if shown := eval[string](p, `document.querySelector('#user-keys').innerText`); strings.Contains(shown, k.Key[3:]) {
		t.Errorf("the users page shows erin's whole key: %s", shown)
	}

	// With a user made, the first-run card lists it done.
	p.visit(`#nav-admin a[href="/admin"]`, "Overview")
	p.waitText("#first-run li.done", "Create a user")

	p.choose("#lang", "zh")
	p.visit(`#nav-admin a[href="/admin/users"]`, "用户")
	p.click(`tr[data-user="dave"] button.reset-password`)
	p.waitText("#password-title", "为 dave 设置新密码")
	p.click(`tr[data-user="dave"] button.edit`)
	p.waitText("#user-form-title", "编辑 dave")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
