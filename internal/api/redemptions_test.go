package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/store"
)

// redemptionInfo is the admin view of a code as tests read it.
type redemptionInfo struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Key          string `json:"key"`
	Status       int    `json:"status"`
	Quota        int64  `json:"quota"`
	CreatedTime  int64  `json:"created_time"`
	RedeemedTime int64  `json:"redeemed_time"`
	UsedUserID   int64  `json:"used_user_id"`
	CreatorID    int64  `json:"creator_id"`
}

// createCodes creates count codes through c and returns their keys.
func createCodes(t *testing.T, c *apptest.Client, name string, quota int64, count int) []string {
	t.Helper()
	var keys []string
	c.OK("POST", "/api/redemption/", map[string]any{"name": name, "quota": quota, "count": count}).Decode(t, &keys)
	if len(keys) != count {
		t.Fatalf("created %d keys, want %d", len(keys), count)
	}
	return keys
}

// codeByKey finds a code by its full key through search.
func codeByKey(t *testing.T, c *apptest.Client, key string) redemptionInfo {
	t.Helper()
	var rows []redemptionInfo
	c.OK("GET", "/api/redemption/search?keyword="+key, nil).Decode(t, &rows)
	if len(rows) != 1 || rows[0].Key != key {
		t.Fatalf("search by key %s: %+v", key, rows)
	}
	return rows[0]
}

func redemptionTotal(t *testing.T, c *apptest.Client) int64 {
	t.Helper()
	return c.OK("GET", "/api/redemption/", nil).Total
}

func userQuota(t *testing.T, e *apptest.Env, id int64) int64 {
	t.Helper()
	var u apptest.UserInfo
	e.Root().OK("GET", apptest.Path("/api/user/%d", id), nil).Decode(t, &u)
	return u.Quota
}

func topupLogs(t *testing.T, e *apptest.Env, userID int64) int64 {
	t.Helper()
	n, err := e.App.Store.CountUserLogs(context.Background(), userID, store.LogTopup)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRedemptionCreateBounds(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var rootInfo apptest.UserInfo
	root.OK("GET", "/api/user/self", nil).Decode(t, &rootInfo)

	bad := []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"name": "n", "quota": 10, "count": 0}, redemption.MsgCountRange},
		{map[string]any{"name": "n", "quota": 10, "count": 101}, redemption.MsgCountRange},
		{map[string]any{"name": "n", "quota": 10, "count": -1}, redemption.MsgCountRange},
		{map[string]any{"name": "", "quota": 10}, redemption.MsgNameLength},
		{map[string]any{"name": "   ", "quota": 10}, redemption.MsgNameLength},
		{map[string]any{"name": strings.Repeat("x", 21), "quota": 10}, redemption.MsgNameLength},
		{map[string]any{"name": "n", "quota": 0}, redemption.MsgQuotaPositive},
		{map[string]any{"name": "n", "quota": -5}, redemption.MsgQuotaPositive},
		{map[string]any{"name": "n"}, redemption.MsgQuotaPositive},
	}
	for _, b := range bad {
		root.Fail("POST", "/api/redemption/", b.body, http.StatusOK, b.msg)
	}
	root.Fail("POST", "/api/redemption/", "{not json", http.StatusOK, httpx.MsgInvalidParams)
	if n := redemptionTotal(t, root); n != 0 {
		t.Fatalf("refused creates left %d codes", n)
	}

	// count defaults to 1; a 20-character name counts characters, not bytes.
	var keys []string
	root.OK("POST", "/api/redemption/", map[string]any{"name": strings.Repeat("码", 20), "quota": 500}).Decode(t, &keys)
	if len(keys) != 1 || len(keys[0]) != redemption.KeyLength {
		t.Fatalf("default create returned %q", keys)
	}
	one := codeByKey(t, root, keys[0])
	if one.Status != redemption.StatusUnused || one.Quota != 500 || one.CreatorID != rootInfo.ID ||
		one.CreatedTime == 0 || one.RedeemedTime != 0 || one.UsedUserID != 0 || one.Name != strings.Repeat("码", 20) {
		t.Fatalf("created code = %+v", one)
	}

	keys = createCodes(t, root, "batch", 7, 100)
	seen := map[string]bool{}
	for _, k := range keys {
		if len(k) != redemption.KeyLength || seen[k] {
			t.Fatalf("key %q is short or repeated", k)
		}
		seen[k] = true
	}
	if n := redemptionTotal(t, root); n != 101 {
		t.Fatalf("total after creating 1 + 100 = %d", n)
	}
}

func TestRedeemConcurrentCreditsOnce(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	key := createCodes(t, root, "race", 1000, 1)[0]

	type redeemer struct {
		c  *apptest.Client
		id int64
	}
	users := make([]redeemer, 10)
	for i := range users {
		users[i].c, users[i].id = e.NewUser(apptest.Path("racer%d", i), 1)
	}
	results := make(chan *apptest.Response, 2*len(users))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, u := range users {
		for range 2 {
			wg.Go(func() {
				<-start
				results <- u.c.Do("POST", "/api/user/topup", map[string]string{"key": key})
			})
		}
	}
	close(start)
	wg.Wait()
	close(results)

	successes := 0
	for r := range results {
		switch {
		case r.Success:
			successes++
			var credited int64
			r.Decode(t, &credited)
			if credited != 1000 {
				t.Errorf("credited %d, want 1000", credited)
			}
		case r.Message != api.MsgRedeemKeyUsed:
			t.Errorf("losing redemption: %d %s", r.Status, r.Raw)
		}
	}
	if successes != 1 {
		t.Fatalf("%d of 20 concurrent redemptions succeeded, want 1", successes)
	}

	code := codeByKey(t, root, key)
	var sum, winners int64
	for _, u := range users {
		q, logs := userQuota(t, e, u.id), topupLogs(t, e, u.id)
		sum += q
		if u.id == code.UsedUserID {
			winners++
			if q != 1000 || logs != 1 {
				t.Errorf("winner %d: quota %d, %d top-up logs; want 1000 and 1", u.id, q, logs)
			}
		} else if q != 0 || logs != 0 {
			t.Errorf("loser %d: quota %d, %d top-up logs; want 0 and 0", u.id, q, logs)
		}
	}
	if sum != 1000 || winners != 1 || code.Status != redemption.StatusUsed || code.RedeemedTime == 0 {
		t.Fatalf("after the race: balances sum %d, winners %d, code %+v", sum, winners, code)
	}
}

func TestRedeemStatusRules(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, userID := e.NewUser("redeemer", 1)
	key := createCodes(t, root, "status", 300, 1)[0]
	id := codeByKey(t, root, key).ID

	user.Fail("POST", "/api/user/topup", map[string]string{"key": "  "}, http.StatusOK, api.MsgRedeemKeyEmpty)
	user.Fail("POST", "/api/user/topup", map[string]string{}, http.StatusOK, api.MsgRedeemKeyEmpty)
	user.Fail("POST", "/api/user/topup", map[string]string{"key": strings.Repeat("Z", 32)}, http.StatusOK, api.MsgRedeemKeyInvalid)
	user.Fail("POST", "/api/user/topup", "{not json", http.StatusOK, httpx.MsgInvalidParams)

	// Disabled codes are refused; re-enabled ones redeem.
	root.OK("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": redemption.StatusDisabled})
	user.Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusOK, api.MsgRedeemKeyDisabled)
	if q := userQuota(t, e, userID); q != 0 {
		t.Fatalf("disabled code credited %d", q)
	}
	root.Fail("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": redemption.StatusUsed}, http.StatusOK, redemption.MsgStatusInvalid)
	root.Fail("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": 0}, http.StatusOK, redemption.MsgStatusInvalid)
	root.Fail("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id}, http.StatusOK, redemption.MsgStatusInvalid)
	root.OK("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": redemption.StatusUnused})

	var credited int64
	user.OK("POST", "/api/user/topup", map[string]string{"key": " " + key + "\n"}).Decode(t, &credited)
	if credited != 300 || userQuota(t, e, userID) != 300 || topupLogs(t, e, userID) != 1 {
		t.Fatalf("redeem credited %d; balance %d", credited, userQuota(t, e, userID))
	}
	user.Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusOK, api.MsgRedeemKeyUsed)

	// A used code is final: no status change, not even to "disabled".
	for _, st := range []int{redemption.StatusUnused, redemption.StatusDisabled} {
		root.Fail("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": st}, http.StatusOK, api.MsgRedemptionUsedStatus)
	}
	var code redemptionInfo
	root.OK("GET", apptest.Path("/api/redemption/%d", id), nil).Decode(t, &code)
	if code.Status != redemption.StatusUsed || code.UsedUserID != userID || code.RedeemedTime == 0 {
		t.Fatalf("used code = %+v", code)
	}
	if userQuota(t, e, userID) != 300 || topupLogs(t, e, userID) != 1 {
		t.Fatal("a refused redemption changed the balance or wrote a log")
	}
}

func TestRedemptionUpdate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, _ := e.NewUser("updater", 1)
	key := createCodes(t, root, "before", 100, 1)[0]
	id := codeByKey(t, root, key).ID

	var code redemptionInfo
	// Without status_only a status in the body is ignored.
	root.OK("PUT", "/api/redemption/", map[string]any{"id": id, "name": " after ", "quota": 250, "status": 2}).Decode(t, &code)
	if code.Name != "after" || code.Quota != 250 || code.Status != redemption.StatusUnused || code.Key != key {
		t.Fatalf("updated code = %+v", code)
	}
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": id, "name": ""}, http.StatusOK, redemption.MsgNameLength)
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": id, "name": strings.Repeat("y", 21)}, http.StatusOK, redemption.MsgNameLength)
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": id, "quota": 0}, http.StatusOK, redemption.MsgQuotaPositive)
	root.Fail("PUT", "/api/redemption/", map[string]any{"name": "x"}, http.StatusOK, api.MsgIDRequired)
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": 987654, "name": "x"}, http.StatusOK, api.MsgRedemptionNotFound)
	root.Fail("PUT", "/api/redemption/", "{not json", http.StatusOK, httpx.MsgInvalidParams)

	// A disabled code is still unused: its quota may change.
	root.OK("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": 2})
	root.OK("PUT", "/api/redemption/", map[string]any{"id": id, "quota": 260}).Decode(t, &code)
	if code.Quota != 260 || code.Status != redemption.StatusDisabled || code.Name != "after" {
		t.Fatalf("disabled code after quota change = %+v", code)
	}
	root.OK("PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": 1})
	user.OK("POST", "/api/user/topup", map[string]string{"key": key})

	// A used code keeps its quota; the refused update changes nothing, not
	// even the name sent with it. Its name alone (and the same quota, as a
	// form sends back) may still change.
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": id, "name": "renamed", "quota": 999}, http.StatusOK, api.MsgRedemptionUsedQuota)
	root.OK("GET", apptest.Path("/api/redemption/%d", id), nil).Decode(t, &code)
	if code.Name != "after" || code.Quota != 260 {
		t.Fatalf("refused update changed the code: %+v", code)
	}
	root.OK("PUT", "/api/redemption/", map[string]any{"id": id, "name": "renamed", "quota": 260}).Decode(t, &code)
	if code.Name != "renamed" || code.Status != redemption.StatusUsed {
		t.Fatalf("renamed used code = %+v", code)
	}
}

func TestRedemptionListSearchDelete(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	alpha := createCodes(t, root, "alpha", 10, 12)
	beta := createCodes(t, root, "beta_50%", 20, 3)

	page0 := root.OK("GET", "/api/redemption/?p=0", nil)
	var rows []redemptionInfo
	page0.Decode(t, &rows)
	if len(rows) != 10 || page0.Total != 15 {
		t.Fatalf("page 0: %d rows, total %d", len(rows), page0.Total)
	}
	if rows[0].ID < rows[1].ID || rows[0].Name != "beta_50%" {
		t.Fatalf("list is not newest first: %+v", rows[:2])
	}
	root.OK("GET", "/api/redemption/?p=1", nil).Decode(t, &rows)
	if len(rows) != 5 {
		t.Fatalf("page 1: %d rows", len(rows))
	}

	search := func(keyword string) (int, int64) {
		r := root.OK("GET", "/api/redemption/search?keyword="+keyword, nil)
		var got []redemptionInfo
		r.Decode(t, &got)
		return len(got), r.Total
	}
	checks := []struct {
		keyword string
		want    int64
	}{
		{"beta", 3},
		{"alp", 12},
		{"50%25", 3}, // "50%": the wildcard matches itself only
		{"%25", 3},
		{"_", 3},
		{"gamma", 0},
		{alpha[4], 1},
		{beta[1][3:20], 1}, // part of a key
	}
	for _, c := range checks {
		if n, total := search(c.keyword); total != c.want || int64(n) != min(c.want, 10) {
			t.Errorf("search %q: %d rows, total %d; want total %d", c.keyword, n, total, c.want)
		}
	}

	// Delete is hard, for unused and used codes alike; the log stays.
	unused, used := codeByKey(t, root, alpha[0]), codeByKey(t, root, alpha[1])
	user, userID := e.NewUser("deleter", 1)
	user.OK("POST", "/api/user/topup", map[string]string{"key": used.Key})
	root.OK("DELETE", apptest.Path("/api/redemption/%d", unused.ID), nil)
	root.OK("DELETE", apptest.Path("/api/redemption/%d", used.ID), nil)
	root.Fail("GET", apptest.Path("/api/redemption/%d", used.ID), nil, http.StatusOK, api.MsgRedemptionNotFound)
	root.Fail("DELETE", apptest.Path("/api/redemption/%d", used.ID), nil, http.StatusOK, api.MsgRedemptionNotFound)
	root.Fail("DELETE", "/api/redemption/abc", nil, http.StatusOK, httpx.MsgInvalidID)
	user.Fail("POST", "/api/user/topup", map[string]string{"key": unused.Key}, http.StatusOK, api.MsgRedeemKeyInvalid)
	if n := redemptionTotal(t, root); n != 13 {
		t.Fatalf("total after deleting 2 of 15 = %d", n)
	}
	if userQuota(t, e, userID) != 10 || topupLogs(t, e, userID) != 1 {
		t.Fatal("deleting a used code changed the balance or its log")
	}
}

func TestRedemptionRoleBoundary(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	key := createCodes(t, root, "guarded", 5, 1)[0]
	id := codeByKey(t, root, key).ID

	user, _ := e.NewUser("plain", 1)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/redemption/", nil},
		{"GET", "/api/redemption/search?keyword=g", nil},
		{"GET", apptest.Path("/api/redemption/%d", id), nil},
		{"POST", "/api/redemption/", map[string]any{"name": "mine", "quota": 1 << 30}},
		{"PUT", "/api/redemption/", map[string]any{"id": id, "quota": 1 << 30}},
		{"PUT", "/api/redemption/?status_only=1", map[string]any{"id": id, "status": 2}},
		{"DELETE", apptest.Path("/api/redemption/%d", id), nil},
	} {
		user.Fail(c.method, c.path, c.body, http.StatusOK, api.MsgNoPermission)
	}
	e.Client().Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusUnauthorized, api.MsgNotLoggedIn)

	// Nothing the user tried changed the code; an admin manages codes.
	admin, _ := e.NewUser("keeper", 10)
	var code redemptionInfo
	admin.OK("GET", apptest.Path("/api/redemption/%d", id), nil).Decode(t, &code)
	if code.Quota != 5 || code.Status != redemption.StatusUnused || redemptionTotal(t, admin) != 1 {
		t.Fatalf("code after the user's attempts = %+v", code)
	}
	createCodes(t, admin, "by admin", 1, 2)
}
