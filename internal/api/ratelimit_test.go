package api_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// TestTokenRateLimitFields: a key's rpm_limit, tpm_limit and
// concurrency_limit are set on create and update, answered by GET and the
// list, validated within their bounds and under the owner's group limits,
// and a refused write changes nothing.
func TestTokenRateLimitFields(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, _ := e.NewUser("alice", 1)
	tok := alice.CreateToken(map[string]any{"name": "k", "rpm_limit": 60, "tpm_limit": 100000, "concurrency_limit": 4})
	if tok.RPMLimit != 60 || tok.TPMLimit != 100000 || tok.ConcurrencyLimit != 4 {
		t.Fatalf("created %+v", tok)
	}
	got := getToken(t, alice, tok.ID)
	if got.RPMLimit != 60 || got.TPMLimit != 100000 || got.ConcurrencyLimit != 4 {
		t.Fatalf("get %+v", got)
	}
	list := apptest.OKData[[]apptest.TokenInfo](alice, "GET", "/api/token/", nil)
	if len(list) != 1 || list[0].ConcurrencyLimit != 4 {
		t.Fatalf("list %+v", list)
	}
	// A field not sent keeps its value.
	alice.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "tpm_limit": 0})
	if got := getToken(t, alice, tok.ID); got.RPMLimit != 60 || got.TPMLimit != 0 || got.ConcurrencyLimit != 4 {
		t.Fatalf("after partial update %+v", got)
	}

	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"rpm_limit": -1}, "rpm_limit 必须是 0 到 1000000000 之间的整数(0 表示不限制)"},
		{map[string]any{"tpm_limit": int64(1) << 62}, "tpm_limit 必须是 0 到 1000000000000 之间的整数(0 表示不限制)"},
		{map[string]any{"concurrency_limit": 1_000_001}, "concurrency_limit 必须是 0 到 1000000 之间的整数(0 表示不限制)"},
	} {
		body := map[string]any{"id": tok.ID, "name": "changed"}
		create := map[string]any{"name": "new"}
		for k, v := range tc.body {
			body[k], create[k] = v, v
		}
		alice.Fail("PUT", "/api/token/", body, http.StatusOK, tc.msg)
		alice.Fail("POST", "/api/token/", create, http.StatusOK, tc.msg)
	}
	// Not a number at all: the JSON decoder refuses it.
	alice.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "rpm_limit": "many"}, http.StatusOK, "")
	if got := getToken(t, alice, tok.ID); got.Name != "k" || got.RPMLimit != 60 {
		t.Fatalf("refused updates changed the key: %+v", got)
	}

	// The admin's group limits bound what a key may set.
	e.Root().OK("PUT", "/api/option/", map[string]any{"key": "GroupRateLimits", "value": `{"default":{"rpm":30,"concurrency":2}}`})
	alice.Fail("POST", "/api/token/", map[string]any{"name": "n", "rpm_limit": 31}, http.StatusOK, "rpm_limit 不能超过所在分组 default 的限制 30")
	alice.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "concurrency_limit": 3}, http.StatusOK, "concurrency_limit 不能超过所在分组 default 的限制 2")
	alice.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "rpm_limit": 30, "concurrency_limit": 0, "tpm_limit": 5_000_000})
	// Status-only updates ignore the limits (a key stored above a limit
	// lowered later can still be switched off and on).
	alice.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": tok.ID, "status": 2, "rpm_limit": 1000})
	if got := getToken(t, alice, tok.ID); got.RPMLimit != 30 || got.Status != 2 {
		t.Fatalf("after status-only %+v", got)
	}
}

// TestGroupRateLimitsOption: the option is validated like the others: a
// bad value changes nothing.
func TestGroupRateLimitsOption(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "GroupRateLimits", "value": `{"vip":{"rpm":100,"tpm":0,"concurrency":5}}`})
	for _, bad := range []string{`{"vip":{"rpm":-1}}`, `{"vip":{"rps":1}}`, `[1]`, `{"vip":{"concurrency":1000001}}`, "{\"\\u0000\":{}}"} {
		root.Fail("PUT", "/api/option/", map[string]any{"key": "GroupRateLimits", "value": bad}, http.StatusOK, "")
	}
	root.Fail("PUT", "/api/option/", map[string]any{"key": "RateLimitFailClosed", "value": "maybe"}, http.StatusOK,
		"配置项 RateLimitFailClosed 的值无效: 必须是 true 或 false")
	var opts []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	root.OK("GET", "/api/option/", nil).Decode(t, &opts)
	found := false
	for _, o := range opts {
		if o.Key == "GroupRateLimits" {
			found = o.Value == `{"vip":{"rpm":100,"tpm":0,"concurrency":5}}`
		}
	}
	if !found {
		t.Errorf("options %+v: the valid value must stay", opts)
	}
}
