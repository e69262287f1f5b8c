package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/httpx"
)

func TestStatusIsPublic(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	var st struct {
		Version         string `json:"version"`
		QuotaPerUnit    int64  `json:"quota_per_unit"`
		StartTime       int64  `json:"start_time"`
		RegisterEnabled bool   `json:"register_enabled"`
	}
	e.Client().OK("GET", "/api/status", nil).Decode(t, &st)
	if st.QuotaPerUnit != 1000000 || st.Version == "" || st.StartTime == 0 || !st.RegisterEnabled {
		t.Fatalf("status = %+v", st)
	}
}

func TestAuthFailuresMatchSpec(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	anon := e.Client()
	anon.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	anon.Bearer("not-a-token").Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgTokenInvalid)

	user, _ := e.NewUser("alice", 1)
	user.Fail("GET", "/api/user/", nil, http.StatusOK, api.MsgNoPermission)
	user.Fail("GET", "/api/option/", nil, http.StatusOK, api.MsgNoPermission)

	admin, _ := e.NewUser("adam", 10)
	admin.OK("GET", "/api/user/", nil)
	admin.Fail("GET", "/api/option/", nil, http.StatusOK, api.MsgNoPermission)
	admin.Fail("GET", "/api/model_price/", nil, http.StatusOK, api.MsgNoPermission)

	// A banned user is refused with a live session and with an access token.
	var tok string
	user.OK("GET", "/api/user/token", nil).Decode(t, &tok)
	e.Root().OK("POST", "/api/user/manage", map[string]string{"username": "alice", "action": "disable"})
	user.Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgUserBanned)
	e.Client().Bearer(tok).Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgUserBanned)
}

func TestUnknownPathAndBadInput(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.Fail("GET", "/api/no/such/thing", nil, http.StatusNotFound, httpx.MsgNotFoundPath)
	root.Fail("POST", "/api/user/", "{not json", http.StatusOK, httpx.MsgInvalidParams)
	root.Fail("POST", "/api/user/", `{"username":"junky","password":"password-1"} junk`, http.StatusOK, httpx.MsgInvalidParams)
	root.Fail("GET", "/api/user/abc", nil, http.StatusOK, httpx.MsgInvalidID)
	root.Fail("DELETE", "/api/user/-3", nil, http.StatusOK, httpx.MsgInvalidID)
	root.Fail("GET", "/api/user/999999", nil, http.StatusOK, api.MsgUserNotFound)
	big := `{"username":"` + strings.Repeat("x", 2<<20) + `"}`
	root.Fail("POST", "/api/user/", big, http.StatusRequestEntityTooLarge, httpx.MsgBodyTooLarge)

	// Nothing was created by the failed calls.
	r := root.OK("GET", "/api/user/", nil)
	if r.Total != 1 {
		t.Fatalf("users after bad input = %d, want only root: %s", r.Total, r.Raw)
	}
}

func TestLoginAndSessions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	var me apptest.UserInfo
	c := e.Client()
	c.Login("root", apptest.RootPassword).Decode(t, &me)
	if me.Username != "root" || me.Role != 100 || me.Status != 1 || me.Group != "default" {
		t.Fatalf("login data = %+v", me)
	}
	if strings.Contains(string(c.Do("GET", "/api/user/self", nil).Raw), "password") {
		t.Fatal("self view mentions a password")
	}
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "root", "password": "wrong-password"}, http.StatusOK, api.MsgLoginFailed)
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "ghost", "password": "wrong-password"}, http.StatusOK, api.MsgLoginFailed)

	c.OK("GET", "/api/user/logout", nil)
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
}

func TestLoginThrottle(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	bad := map[string]string{"username": "root", "password": "wrong-password"}
	for range 5 {
		e.Client().Fail("POST", "/api/user/login", bad, http.StatusOK, api.MsgLoginFailed)
	}
	e.Client().Fail("POST", "/api/user/login", bad, http.StatusTooManyRequests, auth.MsgTooManyAttempts)
	// Even the right password waits out the window from this address.
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "root", "password": apptest.RootPassword},
		http.StatusTooManyRequests, auth.MsgTooManyAttempts)
}

func TestSessionSurvivesRestart(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c := e.Root()
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	// The cookie jar is keyed by host: copy the cookie to the new server.
	c2 := e2.Client()
	c2.Header.Set("Cookie", c.CookieHeader())
	c2.OK("GET", "/api/user/self", nil)
}

func TestAccessTokens(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	user, _ := e.NewUser("bob", 1)
	var first, second string
	user.OK("GET", "/api/user/token", nil).Decode(t, &first)
	if len(first) != 36 || strings.Count(first, "-") != 4 {
		t.Fatalf("access token %q is not a UUID", first)
	}
	e.Client().Bearer(first).OK("GET", "/api/user/self", nil)
	plain := e.Client()
	plain.Header.Set("Authorization", first)
	plain.OK("GET", "/api/user/self", nil)

	user.OK("GET", "/api/user/token", nil).Decode(t, &second)
	e.Client().Bearer(first).Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgTokenInvalid)
	e.Client().Bearer(second).OK("GET", "/api/user/self", nil)

	// Admin views never carry another user's access token.
	r := e.Root().OK("GET", "/api/user/search?keyword=bob", nil)
	if strings.Contains(string(r.Raw), second) || strings.Contains(string(r.Raw), "access_token") {
		t.Fatalf("admin list leaks the access token: %s", r.Raw)
	}
	// ROOT_ACCESS_TOKEN acts as root.
	var me apptest.UserInfo
	e.Client().Bearer(apptest.RootAccessToken).OK("GET", "/api/user/self", nil).Decode(t, &me)
	if me.Role != 100 {
		t.Fatalf("root access token acts as role %d", me.Role)
	}
}

func TestRegister(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c := e.Client()
	var u apptest.UserInfo
	c.OK("POST", "/api/user/register", map[string]string{"username": "carol", "password": "password-1"}).Decode(t, &u)
	if u.Role != 1 || u.Group != "default" || u.Quota != 0 {
		t.Fatalf("registered user = %+v", u)
	}
	c.Fail("POST", "/api/user/register", map[string]string{"username": "carol", "password": "password-1"}, http.StatusOK, api.MsgUsernameTaken)
	c.Fail("POST", "/api/user/register", map[string]string{"username": "ab", "password": "password-1"}, http.StatusOK, "")
	c.Fail("POST", "/api/user/register", map[string]string{"username": "dave", "password": "short"}, http.StatusOK, auth.MsgPasswordLength)
	c.Login("carol", "password-1")

	e.Root().OK("PUT", "/api/option/", map[string]string{"key": "RegisterEnabled", "value": "false"})
	c.Fail("POST", "/api/user/register", map[string]string{"username": "erin", "password": "password-1"}, http.StatusOK, api.MsgRegisterClosed)
}

func TestSelfUpdateAndDelete(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	user, _ := e.NewUser("frank", 1)
	other := e.Client()
	other.Login("frank", "password-frank")

	var u apptest.UserInfo
	user.OK("PUT", "/api/user/self", map[string]string{"display_name": "Frank", "password": "new-password-1"}).Decode(t, &u)
	user.OK("GET", "/api/user/self", nil) // this session continues
	other.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	e.Client().Login("frank", "new-password-1")

	e.Root().Fail("DELETE", "/api/user/self", nil, http.StatusOK, api.MsgRootCannotDelete)
	user.OK("DELETE", "/api/user/self", nil)
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "frank", "password": "new-password-1"}, http.StatusOK, api.MsgUserBanned)
	// Soft delete: the row is kept and shows status 3.
	e.Root().OK("GET", apptest.Path("/api/user/%d", u.ID), nil).Decode(t, &u)
	if u.Status != 3 {
		t.Fatalf("deleted user status = %d", u.Status)
	}
}

func TestAdminRoleBoundaries(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	admin, adminID := e.NewUser("admin1", 10)
	_, admin2ID := e.NewUser("admin2", 10)
	_, userID := e.NewUser("user1", 1)

	admin.Fail("POST", "/api/user/manage", map[string]string{"username": "admin2", "action": "disable"}, http.StatusOK, api.MsgCannotManageRole)
	admin.Fail("POST", "/api/user/manage", map[string]string{"username": "root", "action": "delete"}, http.StatusOK, api.MsgCannotManageRole)
	admin.Fail("POST", "/api/user/manage", map[string]string{"username": "user1", "action": "promote"}, http.StatusOK, api.MsgCannotGrantRole)
	admin.Fail("PUT", "/api/user/", map[string]any{"id": userID, "role": 10}, http.StatusOK, api.MsgCannotGrantRole)
	admin.Fail("PUT", "/api/user/", map[string]any{"id": admin2ID, "quota": 5}, http.StatusOK, api.MsgCannotManageRole)
	admin.Fail("DELETE", apptest.Path("/api/user/%d", admin2ID), nil, http.StatusOK, api.MsgCannotManageRole)
	admin.Fail("POST", "/api/user/", map[string]any{"username": "sneaky", "password": "password-1", "role": 100}, http.StatusOK, api.MsgCannotGrantRole)
	root.Fail("PUT", "/api/user/", map[string]any{"id": userID, "role": 100}, http.StatusOK, api.MsgCannotGrantRole)
	root.Fail("POST", "/api/user/manage", map[string]string{"username": "user1", "action": "explode"}, http.StatusOK, api.MsgUnknownAction)
	admin.OK("POST", "/api/user/manage", map[string]string{"username": "user1", "action": "disable"})
	admin.OK("POST", "/api/user/manage", map[string]string{"username": "user1", "action": "enable"})

	// Demotion ends the admin's sessions; logged in again it is a user.
	admin.OK("GET", "/api/user/", nil)
	root.OK("POST", "/api/user/manage", map[string]string{"username": "admin1", "action": "demote"})
	admin.Fail("GET", "/api/user/", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	admin.Login("admin1", "password-admin1")
	admin.Fail("GET", "/api/user/", nil, http.StatusOK, api.MsgNoPermission)
	root.OK("POST", "/api/user/manage", map[string]string{"username": "admin1", "action": "promote"})
	admin.Fail("GET", "/api/user/", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	admin.Login("admin1", "password-admin1")
	admin.OK("GET", "/api/user/", nil)
	_ = adminID
}

func TestAdminUserCRUD(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var u apptest.UserInfo
	root.OK("POST", "/api/user/", map[string]any{"username": "gina", "password": "password-1", "group": "vip", "quota": 500}).Decode(t, &u)
	if u.Group != "vip" || u.Quota != 500 || u.Role != 1 {
		t.Fatalf("created = %+v", u)
	}
	root.Fail("POST", "/api/user/", map[string]any{"username": "gina", "password": "password-1"}, http.StatusOK, api.MsgUsernameTaken)

	// An absent or empty password leaves the password unchanged.
	root.OK("PUT", "/api/user/", map[string]any{"id": u.ID, "quota": 42, "quota_before": 500, "group": "svip", "password": ""}).Decode(t, &u)
	if u.Quota != 42 || u.Group != "svip" {
		t.Fatalf("updated = %+v", u)
	}
	e.Client().Login("gina", "password-1")
	root.Fail("PUT", "/api/user/", map[string]any{"quota": 1}, http.StatusOK, api.MsgIDRequired)

	for i := range 12 {
		root.OK("POST", "/api/user/", map[string]any{"username": apptest.Path("bulk%02d", i), "password": "password-1"})
	}
	page0 := root.OK("GET", "/api/user/?p=0", nil)
	var list []apptest.UserInfo
	page0.Decode(t, &list)
	if len(list) != 10 || page0.Total != 14 {
		t.Fatalf("page 0: %d rows, total %d", len(list), page0.Total)
	}
	root.OK("GET", "/api/user/?p=1", nil).Decode(t, &list)
	if len(list) != 4 {
		t.Fatalf("page 1: %d rows", len(list))
	}
	root.OK("GET", "/api/user/?p=0&page_size=100", nil).Decode(t, &list)
	if len(list) != 14 {
		t.Fatalf("page_size 100: %d rows", len(list))
	}
	root.OK("GET", "/api/user/search?keyword=bulk1", nil).Decode(t, &list)
	if len(list) != 2 {
		t.Fatalf("search bulk1: %d rows", len(list))
	}
	root.OK("GET", "/api/user/search?keyword=%25", nil).Decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("search %%: %d rows, want the wildcard escaped", len(list))
	}
	root.OK("DELETE", apptest.Path("/api/user/%d", u.ID), nil)
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "gina", "password": "password-1"}, http.StatusOK, api.MsgUserBanned)
}

// TestAdminTopupConcurrent: 100 parallel top-ups, each with its own
// Idempotency-Key, are 100 credits, none lost.
func TestAdminTopupConcurrent(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	_, id := e.NewUser("henry", 1)
	root := e.Root()
	var wg sync.WaitGroup
	results := make([]*apptest.Response, 100)
	for i := range results {
		c := *root
		c.Header = http.Header{"Idempotency-Key": {fmt.Sprintf("batch-%d", i)}}
		wg.Go(func() {
			results[i] = c.Do("POST", "/api/topup", map[string]any{"user_id": id, "quota": 7, "remark": "batch"})
		})
	}
	wg.Wait()
	for _, r := range results {
		if !r.Success {
			t.Fatalf("top-up failed: %s", r.Raw)
		}
	}
	var u apptest.UserInfo
	root.OK("GET", apptest.Path("/api/user/%d", id), nil).Decode(t, &u)
	if u.Quota != 700 {
		t.Fatalf("quota after 100 concurrent top-ups of 7 = %d, want 700", u.Quota)
	}
	root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": -701}, http.StatusOK, api.MsgQuotaBelowBalance)
	root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": 0}, http.StatusOK, api.MsgQuotaZero)
	root.Fail("POST", "/api/topup", map[string]any{"user_id": 987654, "quota": 5}, http.StatusOK, api.MsgUserNotFound)
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": -700})
	root.OK("GET", apptest.Path("/api/user/%d", id), nil).Decode(t, &u)
	if u.Quota != 0 {
		t.Fatalf("quota after deducting all = %d", u.Quota)
	}
	user, _ := e.NewUser("ivan", 1)
	user.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": 5}, http.StatusOK, api.MsgNoPermission)
}
