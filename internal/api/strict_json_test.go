package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// The settings and profile updates refuse null, wrongly typed and
// overflowing bodies with the field named, and change nothing (issue 27
// §5); before, they answered success and saved defaults.
func TestStrictJSONSettingsAndProfile(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, _ := e.NewUser("strictuser", 1)
	user.OK("PUT", "/api/user/self", map[string]any{"display_name": "Before"})
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 600000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 0}}})
	topup := func() string { return string(root.OK("GET", "/api/setting/topup", nil).Data) }
	self := func() string {
		var v struct {
			DisplayName string `json:"display_name"`
		}
		user.OK("GET", "/api/user/self", nil).Decode(t, &v)
		return v.DisplayName
	}
	before := topup()

	for _, tc := range []struct {
		c              *apptest.Client
		path, body     string
		message, field string
	}{
		{user, "/api/user/self", `null`, "无效的参数: 请求体必须是 JSON 对象", ""},
		{user, "/api/user/self", `{"display_name":null}`, "无效的参数: display_name 不能为 null", "display_name"},
		{user, "/api/user/self", `{"display_name":42}`, "无效的参数: display_name 必须是字符串", "display_name"},
		{user, "/api/user/self", `{"display_name":"x","password":["a"]}`, "无效的参数: password 必须是字符串", "password"},
		{user, "/api/user/self", `{"display_name":`, "无效的参数", ""},
		{root, "/api/setting/topup", `null`, "无效的参数", ""},
		{root, "/api/setting/topup", `{"enabled":"yes"}`, "无效的参数", "enabled"},
		{root, "/api/setting/topup", `{"enabled":true,"exchange_rate":9223372036854775808}`, "无效的参数", "exchange_rate"},
		{root, "/api/setting/topup", `{"enabled":true,"exchange_rate":"600000"}`, "无效的参数", "exchange_rate"},
		{root, "/api/setting/topup", `{"enabled":true,"exchange_rate":null}`, "无效的参数", "exchange_rate"},
		{root, "/api/setting/topup", `{"enabled":true,"presets":null}`, "无效的参数", "presets"},
		{root, "/api/setting/topup", `{"enabled":true,"presets":[{"amount":10},null]}`, "无效的参数", "presets[1]"},
		{root, "/api/setting/topup", `{"enabled":true,"presets":[{"amount":10,"bonus_quota":1e40}]}`, "无效的参数", "presets.bonus_quota"},
		{root, "/api/setting/topup", `{"a":1}{}`, "无效的参数", ""},
		{root, "/api/option/", `{"key":"RetryTimes","value":null}`, "无效的参数: value 不能为 null", "value"},
		{root, "/api/option/", `{"key":7,"value":"1"}`, "无效的参数: key 必须是字符串", "key"},
	} {
		r := tc.c.Fail("PUT", tc.path, tc.body, http.StatusOK, tc.message)
		var data struct {
			Field  string `json:"field"`
			Reason string `json:"reason"`
		}
		if len(r.Data) > 0 {
			json.Unmarshal(r.Data, &data)
		}
		if data.Field != tc.field {
			t.Errorf("%s %s: data.field %q, want %q", tc.path, tc.body, data.Field, tc.field)
		}
		// The spec fixes the top-up settings' message as 无效的参数: the
		// reason naming the field is in data.
		if tc.field != "" && tc.path == "/api/setting/topup" && !strings.HasPrefix(data.Reason, "无效的参数: "+tc.field+" ") {
			t.Errorf("%s %s: data.reason %q", tc.path, tc.body, data.Reason)
		}
	}
	if got := topup(); got != before {
		t.Fatalf("a refused body changed the top-up settings:\n%s\n%s", before, got)
	}
	if got := self(); got != "Before" {
		t.Fatalf("a refused body changed the display name to %q", got)
	}
	// In English the message is translated, the field kept; the top-up
	// settings keep the spec's message, their reason is translated.
	root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "en"})
	user.Fail("PUT", "/api/user/self", `{"display_name":true}`, http.StatusOK, "invalid parameters: display_name must be a string")
	r := root.Fail("PUT", "/api/setting/topup", `{"exchange_rate":-9223372036854775809}`, http.StatusOK, "无效的参数")
	if !strings.Contains(string(r.Data), `"reason":"invalid parameters: exchange_rate is out of range"`) {
		t.Fatalf("the English reason: %s", r.Data)
	}
	// Well-formed bodies still work, unknown fields tolerated.
	user.OK("PUT", "/api/user/self", `{"display_name":"After","client_extra":1}`)
	if got := self(); got != "After" {
		t.Fatalf("display name %q", got)
	}
}
