package relay_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay"
)

// sdkError is what both SDK families read of an error: openai-node the
// status and error.{message,type,code}, @anthropic-ai/sdk the status and
// error.{type,message} under a top-level type "error".
type sdkError struct {
	Type  string `json:"type"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// wantOpenAIError fails t unless r is status with OpenAI's error shape, the
// given type and code, and a message containing msg.
func wantOpenAIError(t *testing.T, r *apptest.V1, status int, typ, code, msg string) {
	t.Helper()
	var e sdkError
	if json.Unmarshal(r.Body, &e) != nil || r.Status != status || e.Error == nil || e.Type != "" ||
		e.Error.Type != typ || e.Error.Code != code || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("want %d type %q code %q message ~%q in OpenAI's shape, got %d %s", status, typ, code, msg, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// wantAnthropicError fails t unless r is status with Anthropic's error
// shape, the given error type, and a message containing msg.
func wantAnthropicError(t *testing.T, r *apptest.V1, status int, typ, msg string) {
	t.Helper()
	var e sdkError
	if json.Unmarshal(r.Body, &e) != nil || r.Status != status || e.Type != "error" || e.Error == nil ||
		e.Error.Type != typ || e.Error.Code != nil || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("want %d error.type %q message ~%q in Anthropic's shape, got %d %s", status, typ, msg, r.Status, r.Body)
	}
}

// anthropicCall sends a /v1/messages-family request the way
// @anthropic-ai/sdk does: the key in x-api-key, with anthropic-version.
func anthropicCall(e *apptest.Env, key, method, path string, body any) *apptest.V1 {
	return e.Call("", method, path, body, "x-api-key", key, "anthropic-version", "2023-06-01")
}

func sdkMessages(model string) map[string]any {
	return map[string]any{"model": model, "max_tokens": 16, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
}

// sdkFixture is a gateway with models in every state a caller can meet,
// and keys in every state.
type sdkFixture struct {
	e        *apptest.Env
	g        *apptest.Gateway
	openAI   *fakeupstream.Server
	claude   *fakeupstream.Server
	claudeID int64 // the Anthropic channel serving claude-only
	adminKey string
	keys     map[string]string
}

func newSDKFixture(t *testing.T) *sdkFixture {
	e := apptest.New(t)
	f := &sdkFixture{e: e, openAI: fakeupstream.New(t), claude: fakeupstream.New(t), keys: map[string]string{}}
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: f.openAI.URL})
	f.g = g
	price := func(model string) {
		g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": model, "input_price": 2, "output_price": 8})
	}
	// claude-only: priced, served in the caller's group by an Anthropic
	// channel only. unpriced: served, no price. orphan: priced, served in
	// another group only. cooling: priced, its only channel rate-limits.
	f.claudeID = g.AddChannel(apptest.ChannelSpec{URL: f.claude.URL, Type: channel.TypeAnthropic, Name: "claude", Models: "claude-only"})
	price("claude-only")
	g.AddChannel(apptest.ChannelSpec{URL: f.openAI.URL, Name: "free", Models: "unpriced"})
	g.AddChannel(apptest.ChannelSpec{URL: f.openAI.URL, Name: "vip", Models: "orphan", Group: "vip"})
	price("orphan")

	f.keys["main"] = g.Key
	f.keys["narrow"] = g.User.CreateToken(map[string]any{"name": "narrow", "unlimited_quota": true, "models": "gpt-test"}).Key
	f.keys["subnet"] = g.User.CreateToken(map[string]any{"name": "subnet", "unlimited_quota": true, "subnet": "10.0.0.0/8"}).Key
	f.keys["pinned"] = fmt.Sprintf("%s-%d", g.Key, g.ChannelID)
	f.keys["exhausted"] = g.User.CreateToken(map[string]any{"name": "spent", "remain_quota": 0, "unlimited_quota": false}).Key
	f.keys["short"] = g.User.CreateToken(map[string]any{"name": "short", "remain_quota": 1, "unlimited_quota": false}).Key
	broke, _ := e.NewUser("broke", 1)
	f.keys["broke"] = broke.CreateToken(map[string]any{"name": "broke", "unlimited_quota": true}).Key
	admin, adminID := e.NewUser("admin1", 10)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": adminID, "quota": 10_000_000})
	f.adminKey = admin.CreateToken(map[string]any{"name": "admin", "unlimited_quota": true}).Key
	return f
}

// TestSDKErrorShapes sends every refusal an SDK user can meet before a call
// is forwarded to both ingresses, and checks the status and the fields the
// SDKs act on: OpenAI's type and code, Anthropic's error type. Nothing is
// forwarded or charged.
func TestSDKErrorShapes(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	before := f.g.Quota(f.g.UserID)
	tests := []struct {
		name, key, model string
		status           int
		typ, code        string // OpenAI
		anthropicType    string
		msg              string
	}{
		{"unpriced model", "main", "unpriced", 404, "invalid_request_error", "model_not_found", "not_found_error", "模型 unpriced 未设置价格,暂不可用"},
		{"no channel in the group", "main", "orphan", 404, "invalid_request_error", "model_not_found", "not_found_error", "分组 default 下模型 orphan 无可用渠道"},
		{"unknown model", "main", "no-such-model", 404, "invalid_request_error", "model_not_found", "not_found_error", "no-such-model"},
		{"model allow list", "narrow", "claude-only", 403, "permission_error", "model_not_allowed", "permission_error", "该令牌无权使用模型:claude-only"},
		{"subnet", "subnet", "gpt-test", 403, "permission_error", "subnet_not_allowed", "permission_error", "该令牌只能在指定网段使用:10.0.0.0/8,当前 ip:127.0.0.1"},
		{"pin by a user", "pinned", "gpt-test", 403, "permission_error", "channel_pin_not_allowed", "permission_error", relay.MsgPinNotAllowed},
		{"exhausted key", "exhausted", "gpt-test", 429, "insufficient_quota", "insufficient_quota", "billing_error", relay.MsgKeyExhausted},
		{"key quota short", "short", "gpt-test", 429, "insufficient_quota", "insufficient_quota", "billing_error", relay.MsgTokenQuota},
		{"no balance", "broke", "gpt-test", 429, "insufficient_quota", "insufficient_quota", "billing_error", relay.MsgUserQuota},
		{"unknown key", "sk-nosuchkey", "gpt-test", 401, "invalid_request_error", "invalid_api_key", "authentication_error", relay.MsgInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := f.keys[tt.key]
			if key == "" {
				key = tt.key
			}
			oa := f.e.Call(key, "POST", "/v1/chat/completions", authChat(tt.model))
			wantOpenAIError(t, oa, tt.status, tt.typ, tt.code, tt.msg)
			an := anthropicCall(f.e, key, "POST", "/v1/messages", sdkMessages(tt.model))
			wantAnthropicError(t, an, tt.status, tt.anthropicType, tt.msg)
			// Both SDKs retry a 429 unless told not to: a spent balance
			// says no retry will help; nothing else does.
			wantNoRetry := tt.code == "insufficient_quota"
			for _, r := range []*apptest.V1{oa, an} {
				if got := r.Header.Get("X-Should-Retry") == "false"; got != wantNoRetry {
					t.Errorf("X-Should-Retry %q, want false only on insufficient_quota", r.Header.Get("X-Should-Retry"))
				}
			}
		})
	}
	if n := f.openAI.Count() + f.claude.Count(); n != 0 {
		t.Errorf("refused calls reached an upstream %d times", n)
	}
	if after := f.g.Quota(f.g.UserID); after != before {
		t.Errorf("refused calls changed the balance: %d → %d", before, after)
	}
}

// TestUnsupportedEndpointIs400: an endpoint the model's channels cannot
// speak is the request's fault, not a temporary failure SDKs would retry.
func TestUnsupportedEndpointIs400(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	for _, c := range []struct {
		path string
		body any
	}{
		{"/v1/embeddings", map[string]any{"model": "claude-only", "input": "hi"}},
		{"/v1/images/generations", map[string]any{"model": "claude-only", "prompt": "a cat"}},
		{"/v1/audio/speech", map[string]any{"model": "claude-only", "input": "hi", "voice": "alloy"}},
		{"/v1/completions", map[string]any{"model": "claude-only", "prompt": "hi"}},
	} {
		r := f.e.Call(f.g.Key, "POST", c.path, c.body)
		wantOpenAIError(t, r, http.StatusBadRequest, "invalid_request_error", "unsupported_endpoint",
			"分组 default 下模型 claude-only 的渠道不支持接口 "+c.path)
	}
	// A channel pinned by an admin that cannot speak the endpoint.
	pinned := fmt.Sprintf("%s-%d", f.adminKey, f.claudeID)
	wantOpenAIError(t, f.e.Call(pinned, "POST", "/v1/embeddings", map[string]any{"model": "claude-only", "input": "hi"}),
		http.StatusBadRequest, "invalid_request_error", "unsupported_endpoint", fmt.Sprintf("指定的渠道 %d 不支持接口 /v1/embeddings", f.claudeID))
	// Chat still reaches the Anthropic channel by conversion (and so do
	// Responses calls: responses_test.go).
	if r := f.e.Call(f.g.Key, "POST", "/v1/chat/completions", authChat("claude-only")); r.Status != http.StatusOK {
		t.Fatalf("chat on claude-only: %d %s", r.Status, r.Body)
	}
	if f.openAI.Count() != 0 || f.claude.Count() != 1 {
		t.Errorf("upstream calls: openai %d, anthropic %d; want 0, 1", f.openAI.Count(), f.claude.Count())
	}
}

// TestCoolingDownStays503: channels that exist but are all resting are a
// temporary failure, unlike a model that is not offered.
func TestCoolingDownStays503(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	f.openAI.Script(fakeupstream.Behavior{Status: http.StatusTooManyRequests})
	if r := f.e.Call(f.g.Key, "POST", "/v1/chat/completions", authChat("gpt-test")); r.Status != http.StatusTooManyRequests {
		t.Fatalf("rate-limited channel: %d %s", r.Status, r.Body)
	}
	wantOpenAIError(t, f.e.Call(f.g.Key, "POST", "/v1/chat/completions", authChat("gpt-test")),
		http.StatusServiceUnavailable, "server_error", "no_channel", "无可用渠道")
}

// TestDialectShapeOfEveryAnswer covers the mux's own answers and the body
// failures: each keeps the dialect's shape, the Anthropic one anywhere
// under /v1/messages.
func TestDialectShapeOfEveryAnswer(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	f.g.SetOption("RelayMaxBodyMB", "1")
	key := f.g.Key
	big := `{"model":"gpt-test","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`

	r := anthropicCall(f.e, key, "POST", "/v1/messages/batches", sdkMessages("gpt-test"))
	wantAnthropicError(t, r, http.StatusNotFound, "not_found_error", "Unknown request URL: POST /v1/messages/batches")
	r = anthropicCall(f.e, key, "GET", "/v1/messages/msg_123", nil)
	wantAnthropicError(t, r, http.StatusNotFound, "not_found_error", "/v1/messages/msg_123")
	r = anthropicCall(f.e, key, "GET", "/v1/messages", nil)
	wantAnthropicError(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "GET")
	if r.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/messages: Allow %q", r.Header.Get("Allow"))
	}
	r = anthropicCall(f.e, key, "PUT", "/v1/messages/count_tokens", nil)
	wantAnthropicError(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "PUT")
	wantAnthropicError(t, anthropicCall(f.e, key, "POST", "/v1/messages", `{"model":`), http.StatusBadRequest, "invalid_request_error", relay.MsgInvalidJSON)
	wantAnthropicError(t, anthropicCall(f.e, key, "POST", "/v1/messages", `{"max_tokens":5}`), http.StatusBadRequest, "invalid_request_error", relay.MsgModelRequired)
	wantAnthropicError(t, anthropicCall(f.e, key, "POST", "/v1/messages", big), http.StatusRequestEntityTooLarge, "request_too_large", relay.MsgBodyTooLarge)
	wantAnthropicError(t, anthropicCall(f.e, "", "POST", "/v1/messages", sdkMessages("gpt-test")), http.StatusUnauthorized, "authentication_error", relay.MsgNoKey)

	r = f.e.Call(key, "GET", "/v1/chat/completions", nil)
	wantOpenAIError(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "GET")
	if r.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/chat/completions: Allow %q", r.Header.Get("Allow"))
	}
	r = f.e.Call(key, "POST", "/v1/models", nil)
	wantOpenAIError(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "POST")
	if r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /v1/models: Allow %q", r.Header.Get("Allow"))
	}
	wantOpenAIError(t, f.e.Call(key, "DELETE", "/v1/models/gpt-test", nil), http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "DELETE")
	wantOpenAIError(t, f.e.Call(key, "POST", "/v1/nope", nil), http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: POST /v1/nope")
	wantOpenAIError(t, f.e.Call(key, "POST", "/v1/chat/completions", big), http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", relay.MsgBodyTooLarge)
	wantOpenAIError(t, f.e.Call(key, "GET", "/v1/models/unpriced", nil), http.StatusNotFound, "invalid_request_error", "model_not_found", "unpriced")
	if n := f.openAI.Count() + f.claude.Count(); n != 0 {
		t.Errorf("refused calls reached an upstream %d times", n)
	}
}
