package api_test

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// langCase is one failure and its message in each language; zh == en for
// the spec's messages, which no language changes.
type langCase struct {
	name         string
	client       *apptest.Client
	method, path string
	body         any
	status       int
	zh, en       string
}

func langCases(e *apptest.Env) []langCase {
	root := e.Root()
	user, _ := e.NewUser("plainuser", 1)
	anon := e.Client()
	crossSite := e.Client()
	crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
	return []langCase{
		{"validation", root, "POST", "/api/user/", map[string]any{"username": "ab", "password": "password-ab"}, 200,
			"用户名长度必须在 3 到 20 个字符之间", "username must be 3 to 20 characters"},
		{"not found", root, "GET", "/api/channel/999999", nil, 200, "渠道不存在", "channel not found"},
		{"format with an argument", root, "GET", "/api/log/?type=x", nil, 200, "参数 type 必须是整数", "parameter type must be an integer"},
		{"textfield label", root, "POST", "/api/user/", map[string]any{"username": "ab\x00cd", "password": "password-ab"}, 200,
			"用户名 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符",
			"username contains invalid characters: it must be UTF-8 text without NUL or control characters"},
		{"query label", root, "GET", "/api/user/search?keyword=%00", nil, 200,
			"参数 keyword 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符",
			"parameter keyword contains invalid characters: it must be UTF-8 text without NUL or control characters"},
		{"nested option message", root, "PUT", "/api/option/", map[string]any{"key": "RetryTimes", "value": "99"}, 200,
			"配置项 RetryTimes 的值无效: 必须是 0 到 10 之间的整数", "invalid value for option RetryTimes: must be an integer from 0 to 10"},
		{"price tiers", root, "POST", "/api/model_price/", map[string]any{"model_name": "m",
			"tiers": []map[string]any{{"above_prompt_tokens": 10}, {"above_prompt_tokens": 10}}}, 200,
			"分档起点 above_prompt_tokens 必须从小到大排列且不能重复", "tier above_prompt_tokens values must be in ascending order without repeats"},
		{"unknown path", root, "GET", "/api/no/such/path", nil, 404, "接口不存在", "no such endpoint"},
		{"body limit", root, "PUT", "/api/option/", `{"key":"SystemName","value":"` + strings.Repeat("x", 2<<20) + `"}`, 413,
			"请求体过大,上限 1 MiB", "request body too large; the limit is 1 MiB"},
		{"cross-site", crossSite, "POST", "/api/user/login", map[string]any{"username": "root", "password": "x"}, 403,
			"拒绝跨站请求", "cross-site request refused"},
		// The spec's messages.
		{"spec: not logged in", anon, "GET", "/api/user/self", nil, 401,
			"无权进行此操作,未登录且未提供 access token", "无权进行此操作,未登录且未提供 access token"},
		{"spec: no permission", user, "GET", "/api/option/", nil, 200, "无权进行此操作,权限不足", "无权进行此操作,权限不足"},
		{"spec: invalid JSON", root, "PUT", "/api/option/", `not json`, 200, "无效的参数", "无效的参数"},
		{"spec: invalid id", root, "DELETE", "/api/model_price/abc", nil, 200, "无效的ID", "无效的ID"},
		{"spec: empty model name", root, "POST", "/api/model_price/", map[string]any{"model_name": " "}, 200, "模型名称不能为空", "模型名称不能为空"},
	}
}

func checkLang(t *testing.T, cases []langCase, en bool) {
	t.Helper()
	for _, c := range cases {
		want := c.zh
		if en {
			want = c.en
		}
		r := c.client.Do(c.method, c.path, c.body)
		if r.Status != c.status || r.Success || r.Message != want {
			t.Errorf("%s (en=%v): want %d %q, got %d %.300s", c.name, en, c.status, want, r.Status, r.Raw)
		}
	}
}

// TestMessageLanguage: messages are Chinese by default; MessageLanguage=en
// answers English at once (no restart), except the spec's messages, which
// stay as written; an invalid language is refused and changes nothing.
func TestMessageLanguage(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	cases := langCases(e)
	if got := optionValue(t, root, "MessageLanguage"); got != "zh" {
		t.Fatalf("default MessageLanguage = %q, want zh", got)
	}
	checkLang(t, cases, false)
	// Logging out ends the user's every session: a user of its own.
	logout, _ := e.NewUser("leaving", 1)
	if r := logout.OK("GET", "/api/user/logout", nil); r.Message != "已退出登录" {
		t.Errorf("logout message %q", r.Message)
	}

	root.Fail("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "fr"}, 200, "配置项 MessageLanguage 的值无效: 必须是 zh 或 en")
	root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "en"})
	checkLang(t, cases, true)
	logout.Login("leaving", "password-leaving")
	if r := logout.OK("GET", "/api/user/logout", nil); r.Message != "logged out" {
		t.Errorf("logout message in en %q", r.Message)
	}

	for _, v := range []any{"EN", "zh-CN", "", " en", "en\x00", 1, true} {
		r := root.Do("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": v})
		if r.Success || !strings.HasPrefix(r.Message, "invalid value for option MessageLanguage") && r.Message != "无效的参数" &&
			!strings.Contains(r.Message, "invalid characters") {
			t.Errorf("MessageLanguage %q: got %s", v, r.Raw)
		}
	}
	if got := optionValue(t, root, "MessageLanguage"); got != "en" {
		t.Fatalf("refused values changed MessageLanguage to %q", got)
	}
	root.Fail("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "fr"}, 200, "invalid value for option MessageLanguage: must be zh or en")

	root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "zh"})
	checkLang(t, cases, false)
}
