package relay_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
)

func countBody(model, text string) map[string]any {
	return map[string]any{"model": model, "system": "be brief", "messages": []map[string]string{{"role": "user", "content": text}}}
}

func inputTokens(t *testing.T, r *apptest.V1) int64 {
	t.Helper()
	var a struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if r.Status != http.StatusOK {
		t.Fatalf("count_tokens: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &a)
	if a.InputTokens == nil {
		t.Fatalf("count_tokens: no input_tokens in %s", r.Body)
	}
	return *a.InputTokens
}

// TestCountTokensUpstream: a model with an Anthropic channel in the
// caller's group is counted by that channel, with the channel's key and
// anthropic-version; the call is free.
func TestCountTokensUpstream(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	f.claude.SetBehavior(fakeupstream.Behavior{PromptTokens: 77})
	before := f.g.Quota(f.g.UserID)
	r := anthropicCall(f.e, f.g.Key, "POST", "/v1/messages/count_tokens", countBody("claude-only", "hello"))
	if n := inputTokens(t, r); n != 77 {
		t.Fatalf("input_tokens %d, want the upstream's 77", n)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
	req := f.claude.LastRequest()
	if req.Path != "/v1/messages/count_tokens" || req.Key != fakeupstream.DefaultKey || req.Header.Get("anthropic-version") != "2023-06-01" ||
		req.Header.Get("x-api-key") == f.g.Key || req.Model != "claude-only" {
		t.Errorf("upstream got %s key %q version %q model %q", req.Path, req.Key, req.Header.Get("anthropic-version"), req.Model)
	}
	// The Bearer form works too (any client may call it).
	if n := inputTokens(t, f.e.Call(f.g.Key, "POST", "/v1/messages/count_tokens", countBody("claude-only", "hello"))); n != 77 {
		t.Errorf("with Authorization: %d", n)
	}
	if after := f.g.Quota(f.g.UserID); after != before || len(f.g.ConsumeLogs()) != 0 {
		t.Errorf("count_tokens was charged: balance %d → %d, %d consume logs", before, after, len(f.g.ConsumeLogs()))
	}
	if f.openAI.Count() != 0 {
		t.Errorf("the OpenAI channel was called %d times", f.openAI.Count())
	}
}

// TestCountTokensLocal: without an Anthropic channel, or when it fails or
// does not offer the endpoint, the relay counts locally.
func TestCountTokensLocal(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	short := inputTokens(t, anthropicCall(f.e, f.g.Key, "POST", "/v1/messages/count_tokens", countBody("gpt-test", "hello")))
	long := inputTokens(t, anthropicCall(f.e, f.g.Key, "POST", "/v1/messages/count_tokens",
		countBody("gpt-test", strings.Repeat("the quick brown fox ", 50))))
	if short <= 0 || long < short+150 {
		t.Errorf("local counts: short %d, long %d", short, long)
	}
	if f.openAI.Count() != 0 {
		t.Errorf("an OpenAI channel was asked to count %d times", f.openAI.Count())
	}
	// The Anthropic channel fails (500, then a 404 of a service without
	// the endpoint, then a 429): the local count answers each time.
	for _, status := range []int{http.StatusInternalServerError, http.StatusNotFound, http.StatusTooManyRequests} {
		f.claude.Script(fakeupstream.Behavior{Status: status})
		if n := inputTokens(t, anthropicCall(f.e, f.g.Key, "POST", "/v1/messages/count_tokens", countBody("claude-only", "hello"))); n != short {
			t.Errorf("after an upstream %d: %d, want the local %d", status, n, short)
		}
	}
	// After its 429 the channel cools down: the next count is local
	// without asking it.
	if n := inputTokens(t, anthropicCall(f.e, f.g.Key, "POST", "/v1/messages/count_tokens", countBody("claude-only", "hello"))); n != short {
		t.Errorf("while cooling down: %d, want the local %d", n, short)
	}
	if f.claude.Count() != 3 {
		t.Errorf("anthropic channel asked %d times, want 3", f.claude.Count())
	}
	// Its 400 (an invalid request) reaches the client as it came.
	f.claude.Script(fakeupstream.Behavior{Status: http.StatusBadRequest, ErrorMessage: "messages.0: bad role"})
	pinned := fmt.Sprintf("%s-%d", f.adminKey, f.claudeID)
	r := anthropicCall(f.e, pinned, "POST", "/v1/messages/count_tokens", countBody("claude-only", "hello"))
	wantAnthropicError(t, r, http.StatusBadRequest, "invalid_request_error", "messages.0: bad role")
}

// TestCountTokensRefusals: authorization and the model's availability
// apply as to any call, in Anthropic's shape.
func TestCountTokensRefusals(t *testing.T) {
	apptest.Parallel(t)
	f := newSDKFixture(t)
	f.g.SetOption("RelayMaxBodyMB", "1")
	call := func(key string, body any) *apptest.V1 {
		return anthropicCall(f.e, key, "POST", "/v1/messages/count_tokens", body)
	}
	wantAnthropicError(t, call(f.g.Key, countBody("unpriced", "hi")), http.StatusNotFound, "not_found_error", "模型 unpriced 未设置价格,暂不可用")
	wantAnthropicError(t, call(f.g.Key, countBody("orphan", "hi")), http.StatusNotFound, "not_found_error", "分组 default 下模型 orphan 无可用渠道")
	wantAnthropicError(t, call(f.keys["narrow"], countBody("claude-only", "hi")), http.StatusForbidden, "permission_error", "该令牌无权使用模型:claude-only")
	wantAnthropicError(t, call(f.keys["subnet"], countBody("gpt-test", "hi")), http.StatusForbidden, "permission_error", "该令牌只能在指定网段使用:10.0.0.0/8,当前 ip:127.0.0.1")
	wantAnthropicError(t, call(f.keys["pinned"], countBody("gpt-test", "hi")), http.StatusForbidden, "permission_error", relay.MsgPinNotAllowed)
	wantAnthropicError(t, call("", countBody("gpt-test", "hi")), http.StatusUnauthorized, "authentication_error", relay.MsgNoKey)
	wantAnthropicError(t, call(f.g.Key, `{"model":"gpt-test"}`), http.StatusBadRequest, "invalid_request_error", relay.MsgMessagesRequired)
	wantAnthropicError(t, call(f.g.Key, `{"model":"gpt-test","messages":"hi"}`), http.StatusBadRequest, "invalid_request_error", relay.MsgMessagesRequired)
	wantAnthropicError(t, call(f.g.Key, `{"messages":[]}`), http.StatusBadRequest, "invalid_request_error", relay.MsgModelRequired)
	wantAnthropicError(t, call(f.g.Key, `{"model":"gpt-test","messages":[`), http.StatusBadRequest, "invalid_request_error", relay.MsgInvalidJSON)
	big := `{"model":"gpt-test","messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	wantAnthropicError(t, call(f.g.Key, big), http.StatusRequestEntityTooLarge, "request_too_large", relay.MsgBodyTooLarge)
	// Counting is free: a user with no balance may count.
	if n := inputTokens(t, call(f.keys["broke"], countBody("gpt-test", "hi"))); n <= 0 {
		t.Errorf("broke user's count %d", n)
	}
	if n := f.openAI.Count() + f.claude.Count(); n != 0 {
		t.Errorf("refused counts reached an upstream %d times", n)
	}
}
