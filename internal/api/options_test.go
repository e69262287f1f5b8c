package api_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
)

type optionKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func options(t *testing.T, c *apptest.Client) []optionKV {
	t.Helper()
	return apptest.OKData[[]optionKV](c, "GET", "/api/option/", nil)
}

func optionValue(t *testing.T, c *apptest.Client, key string) string {
	t.Helper()
	for _, o := range options(t, c) {
		if o.Key == key {
			return o.Value
		}
	}
	t.Fatalf("option %s not listed", key)
	return ""
}

func TestListOptions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	list := options(t, e.Root())
	keys := make([]string, len(list))
	for i, o := range list {
		keys[i] = o.Key
		// An endpoint's URL (OidcTokenEndpoint) names a place, not a
		// credential: it is shown (option.Hidden).
		if (strings.Contains(o.Key, "Secret") || strings.Contains(o.Key, "Token")) && !strings.HasSuffix(o.Key, "Endpoint") {
			t.Errorf("hidden key listed: %s", o.Key)
		}
	}
	if !slices.IsSorted(keys) || len(keys) == 0 {
		t.Fatalf("keys not sorted: %v", keys)
	}
	// Defaults are listed though nothing was ever stored.
	want := map[string]string{"NewUserQuota": "0", "RegisterEnabled": "true", "SystemName": "modelgate"}
	for k, v := range want {
		if got := optionValue(t, e.Root(), k); got != v {
			t.Errorf("default %s = %q, want %q", k, got, v)
		}
	}
}

func TestUpdateOption(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "My Gateway"})
	root.OK("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": 1500}) // a JSON number
	root.OK("PUT", "/api/option/", map[string]any{"key": "RegisterEnabled", "value": false})
	want := map[string]string{"SystemName": "My Gateway", "NewUserQuota": "1500", "RegisterEnabled": "false"}
	for k, v := range want {
		if got := optionValue(t, root, k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	var st struct {
		SystemName      string `json:"system_name"`
		RegisterEnabled bool   `json:"register_enabled"`
	}
	e.Client().OK("GET", "/api/status", nil).Decode(t, &st)
	if st.SystemName != "My Gateway" || st.RegisterEnabled {
		t.Fatalf("status after option updates = %+v", st)
	}
	root.OK("PUT", "/api/option/", `{"key":"RegisterEnabled","value":true}`)
	root.OK("PUT", "/api/option/", `{"key":"SystemName","value":""}`)
	if got := optionValue(t, root, "SystemName"); got != "" {
		t.Fatalf("SystemName set to empty = %q", got)
	}

	// Settings survive a restart.
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	if got := optionValue(t, e2.Root(), "NewUserQuota"); got != "1500" {
		t.Fatalf("NewUserQuota after restart = %q", got)
	}
}

func TestUpdateOptionFailures(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": "42"})
	before := options(t, root)
	for _, tt := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"key": "NoSuchKey", "value": "1"}, "未知的配置项: NoSuchKey"},
		{map[string]any{"key": "", "value": "1"}, "未知的配置项: "},
		{map[string]any{"key": "NewUserQuota", "value": "-5"}, "配置项 NewUserQuota 的值无效: 必须是不小于 0 的整数"},
		{map[string]any{"key": "NewUserQuota", "value": "lots"}, "配置项 NewUserQuota 的值无效: 必须是不小于 0 的整数"},
		{map[string]any{"key": "NewUserQuota", "value": 1.5}, "配置项 NewUserQuota 的值无效: 必须是不小于 0 的整数"},
		{map[string]any{"key": "RegisterEnabled", "value": "maybe"}, "配置项 RegisterEnabled 的值无效: 必须是 true 或 false"},
		{map[string]any{"key": "SystemName", "value": strings.Repeat("x", 65)}, "配置项 SystemName 的值无效: 不能超过 64 字节"},
		{map[string]any{"key": "NewUserQuota"}, specInvalidParams},
		{map[string]any{"key": "NewUserQuota", "value": nil}, "无效的参数: value 不能为 null"},
		{map[string]any{"key": "NewUserQuota", "value": []int{1}}, specInvalidParams},
		{map[string]any{"key": "NewUserQuota", "value": map[string]int{"a": 1}}, specInvalidParams},
		{`{"key":"NewUserQuota","value":"7"`, specInvalidParams},
		{`not json`, specInvalidParams},
	} {
		root.Fail("PUT", "/api/option/", tt.body, http.StatusOK, tt.msg)
	}
	if after := options(t, root); !reflect.DeepEqual(after, before) {
		t.Fatalf("failed updates changed options:\nbefore %v\nafter  %v", before, after)
	}
}

func TestNewUserQuotaGoesToRegisteredUsers(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	e.Root().OK("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": "250000"})
	var u apptest.UserInfo
	e.Client().OK("POST", "/api/user/register", map[string]string{"username": "nina", "password": "password-1"}).Decode(t, &u)
	if u.Quota != 250000 {
		t.Fatalf("registered with quota %d, want 250000", u.Quota)
	}
	c := e.Client()
	c.Login("nina", "password-1")
	c.OK("GET", "/api/user/self", nil).Decode(t, &u)
	if u.Quota != 250000 {
		t.Fatalf("stored quota %d, want 250000", u.Quota)
	}
	// A later change applies to later registrations only.
	e.Root().OK("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": 0})
	e.Client().OK("POST", "/api/user/register", map[string]string{"username": "omar", "password": "password-1"}).Decode(t, &u)
	if u.Quota != 0 {
		t.Fatalf("second user quota %d, want 0", u.Quota)
	}
	c.OK("GET", "/api/user/self", nil).Decode(t, &u)
	if u.Quota != 250000 {
		t.Fatalf("first user's quota changed to %d", u.Quota)
	}
}

// Prices and options are Root only: an admin and a user are refused on
// every route, and nothing changes.
func TestPriceAndOptionRoutesAreRootOnly(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var mp modelPrice
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o", "input_price": 1}).Decode(t, &mp)
	gp := groupPrices(t, root)[0]
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/model_price/", nil},
		{"POST", "/api/model_price/", map[string]any{"model_name": "sneaky"}},
		{"PUT", "/api/model_price/", map[string]any{"id": mp.ID, "input_price": 0}},
		{"DELETE", apptest.Path("/api/model_price/%d", mp.ID), nil},
		{"GET", "/api/group_price/", nil},
		{"POST", "/api/group_price/", map[string]any{"group_name": "sneaky"}},
		{"PUT", "/api/group_price/", map[string]any{"id": gp.ID, "discount": 0.1}},
		{"DELETE", apptest.Path("/api/group_price/%d", gp.ID), nil},
		{"GET", "/api/option/", nil},
		{"PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": "999"}},
	}
	modelsBefore, groupsBefore := modelPrices(t, root), groupPrices(t, root)
	admin, _ := e.NewUser("adam", 10)
	user, _ := e.NewUser("ursula", 1)
	for _, rt := range routes {
		admin.Fail(rt.method, rt.path, rt.body, http.StatusOK, api.MsgNoPermission)
		user.Fail(rt.method, rt.path, rt.body, http.StatusOK, api.MsgNoPermission)
		e.Client().Fail(rt.method, rt.path, rt.body, http.StatusUnauthorized, api.MsgNotLoggedIn)
	}
	if !reflect.DeepEqual(modelPrices(t, root), modelsBefore) || !reflect.DeepEqual(groupPrices(t, root), groupsBefore) {
		t.Fatal("refused calls changed prices")
	}
	if v := optionValue(t, root, "NewUserQuota"); v != "0" {
		t.Fatalf("refused option update stored NewUserQuota=%q", v)
	}
	// Root passes every route, also by ROOT_ACCESS_TOKEN.
	bearer := e.Client().Bearer(apptest.RootAccessToken)
	for _, rt := range routes {
		bearer.OK(rt.method, rt.path, rt.body)
	}
}

// Option changes leave an admin log through the batching writer, and the
// writer flushes on shutdown: the row is there after a restart even when
// the process stopped right after the change.
func TestOptionChangeIsLoggedAndFlushedOnShutdown(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	e.Root().OK("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": 77})
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	var logs []struct {
		Type     int    `json:"type"`
		Username string `json:"username"`
		Content  string `json:"content"`
	}
	e2.Root().OK("GET", "/api/log/?type=3", nil).Decode(t, &logs)
	if len(logs) != 1 || logs[0].Username != "root" || !strings.Contains(logs[0].Content, "NewUserQuota = 77") {
		t.Fatalf("admin logs after restart = %+v", logs)
	}
	e2.Root().OK("GET", "/api/log/?type=4", nil).Decode(t, &logs)
	if len(logs) != 1 || !strings.Contains(logs[0].Content, "root") {
		t.Fatalf("system logs = %+v", logs)
	}
}
