package relay_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// v1LangCase is one /v1 failure and its message in each language; zh ==
// en for the spec's messages.
type v1LangCase struct {
	name      string
	key, path string
	body      any
	header    []string
	status    int
	zh, en    string
}

// errorMessage reads the message of an error in the shape of the path's
// SDK family: OpenAI's {"error":{message,type,code}}, Anthropic's
// {"type":"error","error":{type,message}} under /v1/messages.
func errorMessage(t *testing.T, path string, r *apptest.V1) string {
	t.Helper()
	var body sdkError
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Error == nil || body.Error.Type == "" {
		t.Fatalf("%s: not an error body: %d %s", path, r.Status, r.Body)
	}
	if path == "/v1/messages" && body.Type != "error" || path != "/v1/messages" && body.Error.Code == nil {
		t.Fatalf("%s: not the ingress's error shape: %s", path, r.Body)
	}
	return body.Error.Message
}

// TestMessageLanguageV1: /v1 failures answer Chinese by default and
// English under MessageLanguage=en, in both SDK shapes, the spec's
// messages as written in both.
func TestMessageLanguageV1(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	limited := g.User.CreateToken(map[string]any{"name": "limited", "unlimited_quota": true, "models": "other"}).Key
	g.Root.OK("PUT", "/api/option/", map[string]any{"key": "RelayMaxBodyMB", "value": "1"})
	big := `{"model":"gpt-test","messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	anthropic := []string{"anthropic-version", "2023-06-01"}
	msg := map[string]any{"model": "gpt-test", "max_tokens": 16, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	cases := []v1LangCase{
		{"no key", "", "/v1/chat/completions", authChat("gpt-test"), nil, 401, "未提供令牌", "no API key provided"},
		{"invalid key", "sk-" + "notakeyatall", "/v1/chat/completions", authChat("gpt-test"), nil, 401, "无效的令牌", "invalid API key"},
		{"invalid JSON", g.Key, "/v1/chat/completions", `{"model":`, nil, 400, "请求体不是有效的 JSON", "request body is not valid JSON"},
		{"format with an argument", g.Key, "/v1/chat/completions", authChat("unpriced"), nil, 404,
			"模型 unpriced 未设置价格,暂不可用", "model unpriced has no price and is not available"},
		{"anthropic no key", "", "/v1/messages", msg, anthropic, 401, "未提供令牌", "no API key provided"},
		{"anthropic invalid JSON", g.Key, "/v1/messages", `[`, anthropic, 400, "请求体不是有效的 JSON", "request body is not valid JSON"},
		{"spec: model restriction", limited, "/v1/chat/completions", authChat("gpt-test"), nil, 403,
			"该令牌无权使用模型:gpt-test", "该令牌无权使用模型:gpt-test"},
		{"spec: anthropic model restriction", limited, "/v1/messages", msg, anthropic, 403,
			"该令牌无权使用模型:gpt-test", "该令牌无权使用模型:gpt-test"},
		{"body limit", g.Key, "/v1/chat/completions", big, nil, 413, "请求体过大", "request body too large"},
		// The relay's own words around an upstream failure are translated.
		{"upstream failure", g.Key, "/v1/chat/completions", authChat("gpt-test"), nil, 502,
			"上游服务请求失败: 上游返回 500", "upstream request failed: upstream answered 500"},
	}
	up.SetBehavior(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	check := func(en bool) {
		t.Helper()
		for _, c := range cases {
			want := c.zh
			if en {
				want = c.en
			}
			r := e.Call(c.key, "POST", c.path, c.body, c.header...)
			if got := errorMessage(t, c.path, r); r.Status != c.status || got != want {
				t.Errorf("%s (en=%v): want %d %q, got %d %s", c.name, en, c.status, want, r.Status, r.Body)
			}
		}
	}
	check(false)
	g.Root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "en"})
	check(true)
	g.Root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "zh"})
	check(false)
}
