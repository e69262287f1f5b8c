package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/token"
)

func ptr[T any](v T) *T { return &v }

// getToken reads one key through the API.
func getToken(t *testing.T, c *apptest.Client, id int64) apptest.TokenInfo {
	t.Helper()
	return apptest.OKData[apptest.TokenInfo](c, "GET", apptest.Path("/api/token/%d", id), nil)
}

func TestTokenFullKeyOnlyOnCreate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, aliceID := e.NewUser("alice", 1)
	created := alice.CreateToken(map[string]any{
		"name": " my key ", "remain_quota": 500, "models": " gpt-4o, ,claude-3,gpt-4o", "subnet": "10.1.2.3/8, 2001:db8::1",
	})
	key := created.Key
	if len(key) != 51 || !strings.HasPrefix(key, "sk-") || strings.Contains(key[3:], "-") {
		t.Fatalf("created key %q: want sk- and 48 characters without '-'", key)
	}
	want := apptest.TokenInfo{
		ID: created.ID, UserID: aliceID, Name: "my key", Key: key, Status: 1, CreatedTime: created.CreatedTime,
		ExpiredTime: -1, RemainQuota: 500, Models: "gpt-4o,claude-3", Subnet: "10.0.0.0/8,2001:db8::1/128",
	}
	if created != want || created.CreatedTime < time.Now().Unix()-60 {
		t.Fatalf("created = %+v\nwant %+v", created, want)
	}

	masked := "sk-" + key[3:7] + "**********" + key[47:]
	secret, hash := key[3:], token.HashKey(key)
	for _, path := range []string{"/api/token/", "/api/token/search?keyword=my", apptest.Path("/api/token/%d", created.ID)} {
		r := alice.OK("GET", path, nil)
		for _, leak := range []string{secret, hash, "key_hash", "key_prefix"} {
			if strings.Contains(string(r.Raw), leak) {
				t.Fatalf("GET %s shows %q: %s", path, leak, r.Raw)
			}
		}
		if !strings.Contains(string(r.Raw), `"key":"`+masked+`"`) {
			t.Fatalf("GET %s: want the masked key %s: %s", path, masked, r.Raw)
		}
	}
	got := getToken(t, alice, created.ID)
	want.Key = masked
	if got != want {
		t.Fatalf("get = %+v\nwant %+v", got, want)
	}
	// The stored hash finds the key, as the relay will look it up.
	stored, err := e.App.Store.TokenByKeyHash(t.Context(), hash)
	if err != nil || stored.ID != created.ID {
		t.Fatalf("TokenByKeyHash = %d, %v", stored.ID, err)
	}
}

func TestTokensAreOwnersOnly(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	bob, _ := e.NewUser("bob", 1)
	root := e.Root()
	tok := alice.CreateToken(map[string]any{"name": "alice-key", "remain_quota": 5})
	before := getToken(t, alice, tok.ID)

	missing := apptest.Path("/api/token/%d", tok.ID+1000*50)
	for _, c := range []*apptest.Client{bob, root} {
		for _, path := range []string{apptest.Path("/api/token/%d", tok.ID), missing} {
			c.Fail("GET", path, nil, http.StatusOK, api.MsgTokenNotFound)
			c.Fail("DELETE", path, nil, http.StatusOK, api.MsgTokenNotFound)
		}
		c.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "name": "stolen", "remain_quota": 1}, http.StatusOK, api.MsgTokenNotFound)
		c.Fail("PUT", "/api/token/?status_only=1", map[string]any{"id": tok.ID, "status": 2}, http.StatusOK, api.MsgTokenNotFound)
		for _, path := range []string{"/api/token/", "/api/token/search?keyword=alice"} {
			if r := c.OK("GET", path, nil); r.Total != 0 || strings.Contains(string(r.Raw), "alice-key") {
				t.Fatalf("GET %s by another user shows alice's key: %s", path, r.Raw)
			}
		}
	}
	if got := getToken(t, alice, tok.ID); got != before {
		t.Fatalf("alice's key changed by others: %+v, was %+v", got, before)
	}
	// Root's own keys stay apart from alice's too.
	root.CreateToken(map[string]any{"name": "root-key"})
	if r := alice.OK("GET", "/api/token/", nil); r.Total != 1 {
		t.Fatalf("alice sees %d keys, want 1: %s", r.Total, r.Raw)
	}
}

func TestTokenStatusOnlyChangesOnlyStatus(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	tok := alice.CreateToken(map[string]any{"name": "k", "remain_quota": 10, "models": "a", "subnet": "1.2.3.4"})
	before := getToken(t, alice, tok.ID)
	everything := map[string]any{
		"id": tok.ID, "status": 2, "name": "changed", "remain_quota": 999, "unlimited_quota": true,
		"models": "x,y", "subnet": "10.0.0.0/8", "expired_time": time.Now().Unix() + 3600,
	}
	var got apptest.TokenInfo
	alice.OK("PUT", "/api/token/?status_only=1", everything).Decode(t, &got)
	want := before
	want.Status = 2
	if got != want || getToken(t, alice, tok.ID) != want {
		t.Fatalf("after status_only = %+v\nwant %+v", got, want)
	}
	// Fields that would be invalid are ignored too.
	everything["status"], everything["name"], everything["subnet"] = 1, "", "not-a-cidr"
	alice.OK("PUT", "/api/token/?status_only=1", everything)
	if got := getToken(t, alice, tok.ID); got != before {
		t.Fatalf("after re-enabling = %+v\nwant %+v", got, before)
	}
	alice.Fail("PUT", "/api/token/?status_only=1", map[string]any{"id": tok.ID, "status": 4}, http.StatusOK, token.MsgStatusInvalid)
	alice.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "status": 3}, http.StatusOK, token.MsgStatusInvalid)
	alice.Fail("PUT", "/api/token/?status_only=1", map[string]any{"status": 2}, http.StatusOK, api.MsgIDRequired)
}

func TestTokenValidationChangesNothing(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	now := time.Now().Unix()
	long := strings.Repeat("n", 51)
	bad := []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"name": ""}, token.MsgNameLength},
		{map[string]any{"name": "   "}, token.MsgNameLength},
		{map[string]any{"name": long}, token.MsgNameLength},
		{map[string]any{"name": "k", "subnet": "10.0.0.0/33"}, fmt.Sprintf(token.MsgSubnetInvalid, "10.0.0.0/33")},
		{map[string]any{"name": "k", "subnet": "1.2.3.4,example.com"}, fmt.Sprintf(token.MsgSubnetInvalid, "example.com")},
		{map[string]any{"name": "k", "expired_time": now - 60}, token.MsgExpiredTimePast},
		{map[string]any{"name": "k", "expired_time": 0}, token.MsgExpiredTimePast},
		{map[string]any{"name": "k", "remain_quota": -1}, token.MsgRemainQuotaNeg},
		{map[string]any{"name": "k", "models": "ok," + strings.Repeat("m", 192)}, token.MsgModelNameLength},
	}
	for _, b := range bad {
		alice.Fail("POST", "/api/token/", b.body, http.StatusOK, b.msg)
	}
	if r := alice.OK("GET", "/api/token/", nil); r.Total != 0 {
		t.Fatalf("failed creates left %d keys", r.Total)
	}
	alice.CreateToken(map[string]any{"name": strings.Repeat("名", 50)})

	tok := alice.CreateToken(map[string]any{"name": "k", "remain_quota": 7, "subnet": "1.2.3.4", "expired_time": now + 3600})
	before := getToken(t, alice, tok.ID)
	for _, b := range bad {
		b.body["id"] = tok.ID
		if b.body["name"] == "k" {
			delete(b.body, "name")
		}
		alice.Fail("PUT", "/api/token/", b.body, http.StatusOK, b.msg)
		if got := getToken(t, alice, tok.ID); got != before {
			t.Fatalf("failed update %v changed the key: %+v", b.body, got)
		}
	}

	// A valid full update normalises what it stores; absent fields stay.
	var got apptest.TokenInfo
	alice.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "name": " renamed ", "models": "b, a,b", "subnet": " 10.9.8.7/8 ,::ffff:1.2.3.4", "expired_time": -1}).Decode(t, &got)
	want := before
	want.Name, want.Models, want.Subnet, want.ExpiredTime = "renamed", "b,a", "10.0.0.0/8,1.2.3.4/32", -1
	if got != want || getToken(t, alice, tok.ID) != want {
		t.Fatalf("after update = %+v\nwant %+v", got, want)
	}
	// An empty list clears the restriction.
	alice.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "subnet": " , ", "models": ""}).Decode(t, &got)
	if got.Subnet != "" || got.Models != "" || got.Name != "renamed" {
		t.Fatalf("after clearing = %+v", got)
	}
}

func TestTokenReEnableRefused(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, aliceID := e.NewUser("alice", 1)
	now := time.Now().Unix()
	enable := func(id int64) map[string]any { return map[string]any{"id": id, "status": 1} }

	// Expired: reported as 3 while the stored row still says enabled.
	exp := alice.CreateToken(map[string]any{"name": "exp", "remain_quota": 100, "expired_time": now + 3600})
	e.SetToken(aliceID, exp.ID, store.TokenPatch{ExpiredTime: ptr(now - 10)})
	if got := getToken(t, alice, exp.ID); got.Status != token.StatusExpired {
		t.Fatalf("past-expiry key status = %d, want 3", got.Status)
	}
	alice.Fail("PUT", "/api/token/?status_only=1", enable(exp.ID), http.StatusOK, token.MsgEnableExpired)
	alice.Fail("PUT", "/api/token/", map[string]any{"id": exp.ID, "status": 1, "name": "x"}, http.StatusOK, token.MsgEnableExpired)
	// Echoing the key back (status 3, the past expiry) with a new name is fine.
	var got apptest.TokenInfo
	alice.OK("PUT", "/api/token/", map[string]any{"id": exp.ID, "status": 3, "expired_time": now - 10, "name": "old"}).Decode(t, &got)
	if got.Status != 3 || got.Name != "old" {
		t.Fatalf("after echo = %+v", got)
	}
	// Moving the expiry alone does not re-enable it; status 1 with it does.
	alice.OK("PUT", "/api/token/", map[string]any{"id": exp.ID, "expired_time": now + 60}).Decode(t, &got)
	if got.Status != token.StatusExpired {
		t.Fatalf("status after moving the expiry alone = %d, want 3", got.Status)
	}
	e.SetToken(aliceID, exp.ID, store.TokenPatch{ExpiredTime: ptr(now - 10)})
	alice.OK("PUT", "/api/token/", map[string]any{"id": exp.ID, "status": 1, "expired_time": -1}).Decode(t, &got)
	if got.Status != 1 || got.ExpiredTime != -1 {
		t.Fatalf("after enabling with expiry -1 = %+v", got)
	}

	// Exhausted: disabling and enabling again does not get round it.
	ex := alice.CreateToken(map[string]any{"name": "ex", "remain_quota": 100})
	e.SetToken(aliceID, ex.ID, store.TokenPatch{Status: ptr(token.StatusExhausted), RemainQuota: ptr(int64(0))})
	alice.Fail("PUT", "/api/token/?status_only=1", enable(ex.ID), http.StatusOK, token.MsgEnableExhausted)
	alice.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": ex.ID, "status": 2})
	alice.Fail("PUT", "/api/token/?status_only=1", enable(ex.ID), http.StatusOK, token.MsgEnableExhausted)
	alice.Fail("PUT", "/api/token/", map[string]any{"id": ex.ID, "status": 1, "remain_quota": 0}, http.StatusOK, token.MsgEnableExhausted)
	if got := getToken(t, alice, ex.ID); got.Status != token.StatusDisabled {
		t.Fatalf("refused enables changed the status to %d", got.Status)
	}
	alice.OK("PUT", "/api/token/", map[string]any{"id": ex.ID, "status": 1, "remain_quota": 50}).Decode(t, &got)
	if got.Status != 1 || got.RemainQuota != 50 {
		t.Fatalf("after enabling with quota = %+v", got)
	}
	e.SetToken(aliceID, ex.ID, store.TokenPatch{Status: ptr(token.StatusExhausted), RemainQuota: ptr(int64(0))})
	alice.OK("PUT", "/api/token/", map[string]any{"id": ex.ID, "status": 1, "unlimited_quota": true}).Decode(t, &got)
	if got.Status != 1 || !got.UnlimitedQuota {
		t.Fatalf("after enabling as unlimited = %+v", got)
	}
}

func TestTokenDeleteSearchAndPages(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	var ids []int64
	for i := range 12 {
		ids = append(ids, alice.CreateToken(map[string]any{"name": fmt.Sprintf("key%02d", i)}).ID)
	}
	alice.CreateToken(map[string]any{"name": "100%_off"})
	var list []apptest.TokenInfo
	r := alice.OK("GET", "/api/token/?p=0", nil)
	r.Decode(t, &list)
	if len(list) != 10 || r.Total != 13 || list[0].Name != "100%_off" || list[1].ID != ids[11] || list[9].ID != ids[3] {
		t.Fatalf("page 0: %d rows, total %d, first %+v", len(list), r.Total, list[0])
	}
	alice.OK("GET", "/api/token/?p=1", nil).Decode(t, &list)
	if len(list) != 3 || list[2].ID != ids[0] {
		t.Fatalf("page 1: %+v", list)
	}
	for keyword, want := range map[string]int{"key1": 2, "%25": 1, "_": 1, "nothing": 0} {
		r := alice.OK("GET", "/api/token/search?keyword="+keyword, nil)
		r.Decode(t, &list)
		if len(list) != want || r.Total != int64(want) {
			t.Fatalf("search %q: %d rows, total %d, want %d", keyword, len(list), r.Total, want)
		}
	}

	alice.OK("DELETE", apptest.Path("/api/token/%d", ids[5]), nil)
	alice.Fail("GET", apptest.Path("/api/token/%d", ids[5]), nil, http.StatusOK, api.MsgTokenNotFound)
	alice.Fail("DELETE", apptest.Path("/api/token/%d", ids[5]), nil, http.StatusOK, api.MsgTokenNotFound)
	if r := alice.OK("GET", "/api/token/", nil); r.Total != 12 {
		t.Fatalf("after delete total = %d", r.Total)
	}
}

func TestTokenAuthBoundary(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	anon := e.Client()
	anon.Fail("GET", "/api/token/", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	anon.Fail("POST", "/api/token/", map[string]any{"name": "k"}, http.StatusUnauthorized, api.MsgNotLoggedIn)
	anon.Fail("DELETE", "/api/token/1", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	// An API key is not an access token for /api.
	alice, _ := e.NewUser("alice", 1)
	key := alice.CreateToken(map[string]any{"name": "k"}).Key
	e.Client().Bearer(key).Fail("GET", "/api/token/", nil, http.StatusOK, api.MsgTokenInvalid)
	// The access token works like the session.
	var access string
	alice.OK("GET", "/api/user/token", nil).Decode(t, &access)
	if r := e.Client().Bearer(access).OK("GET", "/api/token/", nil); r.Total != 1 {
		t.Fatalf("list by access token: total %d", r.Total)
	}
	e.Root().OK("POST", "/api/user/manage", map[string]string{"username": "alice", "action": "disable"})
	alice.Fail("GET", "/api/token/", nil, http.StatusOK, api.MsgUserBanned)
}

func TestTokenConcurrentCreates(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	var (
		mu     sync.Mutex
		keys   = map[string]bool{}
		ids    = map[int64]bool{}
		failed []string
		wg     sync.WaitGroup
	)
	for i := range 20 {
		wg.Go(func() {
			r := alice.Do("POST", "/api/token/", map[string]any{"name": fmt.Sprintf("k%d", i)})
			var tok apptest.TokenInfo
			err := json.Unmarshal(r.Data, &tok)
			mu.Lock()
			defer mu.Unlock()
			if !r.Success || err != nil {
				failed = append(failed, string(r.Raw))
				return
			}
			keys[tok.Key], ids[tok.ID] = true, true
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of 20 concurrent creates failed, first: %s", len(failed), failed[0])
	}
	if r := alice.OK("GET", "/api/token/?page_size=100", nil); len(keys) != 20 || len(ids) != 20 || r.Total != 20 {
		t.Fatalf("20 creates: %d keys, %d ids, total %d", len(keys), len(ids), r.Total)
	}
}

// TestAdminListsAUsersKeys: GET /api/user/{id}/tokens shows an admin a
// user's keys, masked as their owner sees them, paged; a user may not
// call it, and an unknown user is refused.
func TestAdminListsAUsersKeys(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, aliceID := e.NewUser("alice", 1)
	bob, bobID := e.NewUser("bob", 1)
	admin, _ := e.NewUser("ada", 10)
	k1 := alice.CreateToken(map[string]any{"name": "alice-one"})
	alice.CreateToken(map[string]any{"name": "alice-two"})
	bob.CreateToken(map[string]any{"name": "bob-key"})

	for _, c := range []*apptest.Client{e.Root(), admin} {
		r := c.OK("GET", apptest.Path("/api/user/%d/tokens", aliceID), nil)
		var keys []apptest.TokenInfo
		r.Decode(t, &keys)
		if r.Total != 2 || len(keys) != 2 || strings.Contains(string(r.Raw), "bob-key") {
			t.Fatalf("alice's keys: %s", r.Raw)
		}
		if strings.Contains(string(r.Raw), k1.Key[3:]) || !strings.Contains(string(r.Raw), `"key":"sk-`+k1.Key[3:7]+"**********"+k1.Key[47:]+`"`) {
			t.Fatalf("alice's keys are not masked as their owner sees them: %s", r.Raw)
		}
		if r := c.OK("GET", apptest.Path("/api/user/%d/tokens?page_size=1&p=1", aliceID), nil); r.Total != 2 || strings.Count(string(r.Raw), `"name"`) != 1 {
			t.Fatalf("second page of one: %s", r.Raw)
		}
		c.Fail("GET", apptest.Path("/api/user/%d/tokens", bobID+1000*50), nil, http.StatusOK, api.MsgUserNotFound)
	}
	bob.Fail("GET", apptest.Path("/api/user/%d/tokens", aliceID), nil, http.StatusOK, "")
}
