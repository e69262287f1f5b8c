package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/textfield"
)

// badChars is the refusal of a field holding a NUL, a control character or
// invalid UTF-8.
func badChars(label string) string { return fmt.Sprintf(textfield.MsgInvalidChars, label) }

// TestStoredTextRefusesWhatAColumnCannotHold pins issue 6: a NUL in a name
// was stored on SQLite and answered 500 on PostgreSQL; control characters
// were stored everywhere. Every such field is now refused with a message
// naming it (HTTP 200, success false), and nothing is written.
func TestStoredTextRefusesWhatAColumnCannotHold(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, userID := e.NewUser("alice", 1)
	tok := user.CreateToken(map[string]any{"name": "k1"})
	var ch struct {
		ID int64 `json:"id"`
	}
	root.OK("POST", "/api/channel/", map[string]any{"name": "c1", "models": "gpt-x", "key": "sk-up"}).Decode(t, &ch)

	for _, tc := range []struct {
		name         string
		c            *apptest.Client
		method, path string
		body         any
		want         string
	}{
		{"user display_name", root, "POST", "/api/user/", map[string]any{"username": "bob01", "password": "password-1", "display_name": "Bob\x00"}, badChars("显示名称")},
		{"user username DEL", root, "POST", "/api/user/", map[string]any{"username": "bob\x7f02", "password": "password-1"}, badChars("用户名")},
		{"user group", root, "POST", "/api/user/", map[string]any{"username": "bob03", "password": "password-1", "group": "vip\x00"}, badChars("分组名称")},
		{"user update display_name", root, "PUT", "/api/user/", map[string]any{"id": userID, "display_name": "A\u0085B"}, badChars("显示名称")},
		{"self display_name", user, "PUT", "/api/user/self", map[string]any{"display_name": "A\x00"}, badChars("显示名称")},
		{"login username", e.Client(), "POST", "/api/user/login", map[string]any{"username": "ro\x00ot", "password": "x"}, badChars("用户名")},
		{"manage username", root, "POST", "/api/user/manage", map[string]any{"username": "ali\x00ce", "action": "disable"}, badChars("用户名")},
		{"top-up remark", root, "POST", "/api/topup", map[string]any{"user_id": userID, "quota": 5, "remark": "gift\x00"}, badChars("备注")},
		{"top-up remark over 500", root, "POST", "/api/topup", map[string]any{"user_id": userID, "quota": 5, "remark": strings.Repeat("备", 501)}, fmt.Sprintf(textfield.MsgTooLong, "备注", 500)},
		{"token name", user, "POST", "/api/token/", map[string]any{"name": "k\x00"}, badChars("令牌名称")},
		{"token models", user, "POST", "/api/token/", map[string]any{"name": "k2", "models": "gpt-4o,gpt\x00"}, badChars("模型名称")},
		{"token update name", user, "PUT", "/api/token/", map[string]any{"id": tok.ID, "name": "k\ttab"}, badChars("令牌名称")},
		{"channel name", root, "POST", "/api/channel/", map[string]any{"name": "c\x00", "models": "gpt-x"}, badChars("渠道名称")},
		{"channel key", root, "POST", "/api/channel/", map[string]any{"name": "c2", "models": "gpt-x", "key": "sk-\x00"}, badChars("密钥")},
		{"channel models", root, "POST", "/api/channel/", map[string]any{"name": "c3", "models": "gpt-x,gpt\x00y"}, badChars("模型名称")},
		{"channel group", root, "POST", "/api/channel/", map[string]any{"name": "c4", "models": "gpt-x", "group": "default,vip\x00"}, badChars("分组名称")},
		{"channel update key", root, "PUT", "/api/channel/", map[string]any{"id": ch.ID, "key": "sk-\x00"}, badChars("密钥")},
		{"channel update name", root, "PUT", "/api/channel/", map[string]any{"id": ch.ID, "name": "c\u2028d"}, badChars("渠道名称")},
		{"model price name", root, "POST", "/api/model_price/", map[string]any{"model_name": "gpt\x00", "input_price": 1}, badChars("模型名称")},
		{"group price group", root, "POST", "/api/group_price/", map[string]any{"group_name": "vip\x00", "discount": 0.5}, badChars("分组名称")},
		{"group price model", root, "POST", "/api/group_price/", map[string]any{"group_name": "vip", "model_name": "gpt\x00", "discount": 0.5}, badChars("模型名称")},
		{"redemption name", root, "POST", "/api/redemption/", map[string]any{"name": "r\x00", "quota": 1}, badChars("兑换码名称")},
		{"redeem key", user, "POST", "/api/user/topup", map[string]any{"key": "KEY\x00"}, api.MsgRedeemKeyInvalid},
		{"option value", root, "PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "gw\x00"}, badChars("配置值")},
	} {
		if r := tc.c.Do(tc.method, tc.path, tc.body); r.Status != http.StatusOK || r.Success || r.Message != tc.want {
			t.Errorf("%s: want 200 %q, got %d %s", tc.name, tc.want, r.Status, r.Raw)
		}
	}

	// A header is looked up only when a column could hold it.
	for _, bad := range []string{"tok-\xff\xfe", strings.Repeat("t", 65), "a\tb"} {
		c := e.Client().Bearer(bad)
		if r := c.Do("GET", "/api/user/self", nil); r.Status != http.StatusOK || r.Success || r.Message != api.MsgTokenInvalid {
			t.Errorf("Authorization %q: want 200 %q, got %d %s", bad, api.MsgTokenInvalid, r.Status, r.Raw)
		}
	}

	// Nothing was written.
	if n := root.OK("GET", "/api/user/?page_size=100", nil).Total; n != 2 {
		t.Errorf("%d users, want root and alice", n)
	}
	var u apptest.UserInfo
	root.OK("GET", apptest.Path("/api/user/%d", userID), nil).Decode(t, &u)
	if u.Quota != 0 || u.Status != 1 {
		t.Errorf("alice: quota %d status %d, want 0 and 1", u.Quota, u.Status)
	}
	if n := user.OK("GET", "/api/token/", nil).Total; n != 1 {
		t.Errorf("%d keys, want 1", n)
	}
	var toks []apptest.TokenInfo
	user.OK("GET", "/api/token/", nil).Decode(t, &toks)
	if toks[0].Name != "k1" {
		t.Errorf("key name %q, want k1", toks[0].Name)
	}
	if n := root.OK("GET", "/api/channel/", nil).Total; n != 1 {
		t.Errorf("%d channels, want 1", n)
	}
	var prices []json0
	root.OK("GET", "/api/model_price/", nil).Decode(t, &prices)
	if len(prices) != 0 {
		t.Errorf("%d model prices, want 0", len(prices))
	}
	if n := root.OK("GET", "/api/redemption/", nil).Total; n != 0 {
		t.Errorf("%d redemption codes, want 0", n)
	}

	// Text that is merely not ASCII is stored and found as it is.
	named := user.CreateToken(map[string]any{"name": "密钥-😀", "models": "模型-1"})
	var found []apptest.TokenInfo
	user.OK("GET", "/api/token/search?keyword="+url.QueryEscape("密钥"), nil).Decode(t, &found)
	if len(found) != 1 || found[0].Name != "密钥-😀" || found[0].Models != "模型-1" || named.Name != "密钥-😀" {
		t.Errorf("unicode key name: created %+v, found %+v", named, found)
	}
}

// json0 decodes any list item when only the count matters.
type json0 struct{}

// TestQueryTextRefused pins issue 6: a NUL or invalid UTF-8 in a search
// keyword or a log filter answered 500 on PostgreSQL. Such a parameter, or
// one longer than any column it is compared with, is refused with a
// message naming it; an ordinary one still works.
func TestQueryTextRefused(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, _ := e.NewUser("alice", 1)
	var ch struct {
		ID int64 `json:"id"`
	}
	root.OK("POST", "/api/channel/", map[string]any{"name": "c1", "models": "gpt-x", "base_url": "http://127.0.0.1:1"}).Decode(t, &ch)
	tooLong := func(name string, n int) string { return fmt.Sprintf(textfield.MsgTooLong, "参数 "+name, n) }

	for _, tc := range []struct {
		c     *apptest.Client
		path  string
		param string
		max   int
	}{
		{root, "/api/user/search", "keyword", 191},
		{user, "/api/token/search", "keyword", 191},
		{root, "/api/channel/search", "keyword", 191},
		{root, "/api/redemption/search", "keyword", 191},
		{root, "/api/log/search", "keyword", 191},
		{user, "/api/log/self/search", "keyword", 191},
		{root, "/api/log/", "model_name", 191},
		{root, "/api/log/", "username", 64},
		{root, "/api/log/", "token_name", 64},
		{root, "/api/log/", "group", 64},
		{root, "/api/log/stat", "model_name", 191},
		{user, "/api/log/self", "token_name", 64},
		{user, "/api/log/self/stat", "group", 64},
		{root, apptest.Path("/api/channel/test/%d", ch.ID), "model", 191},
	} {
		refused := map[string]string{"%00": badChars("参数 " + tc.param), "ab%00cd": badChars("参数 " + tc.param),
			"%FF": badChars("参数 " + tc.param), "a%C3": badChars("参数 " + tc.param), "%07": badChars("参数 " + tc.param),
			strings.Repeat("a", tc.max+1): tooLong(tc.param, tc.max)}
		for v, want := range refused {
			path := tc.path + "?" + tc.param + "=" + v
			if r := tc.c.Do("GET", path, nil); r.Status != http.StatusOK || r.Success || r.Message != want {
				t.Errorf("GET %s: want 200 %q, got %d %s", path, want, r.Status, r.Raw)
			}
		}
		if !strings.Contains(tc.path, "/channel/test/") {
			tc.c.OK("GET", tc.path+"?"+tc.param+"="+url.QueryEscape(strings.Repeat("模", tc.max)), nil)
		}
	}
}
