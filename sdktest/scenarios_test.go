package sdktest

import (
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// What the fake upstreams answer by default, as the SDKs must see it.
var (
	reply       = fakeupstream.DefaultReply
	openAIUsage = map[string]int64{"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
	claudeUsage = map[string]int64{"input_tokens": 12, "output_tokens": 8}
)

// The spec's message for a model outside the key's allow list.
const msgModelNotAllowed = "该令牌无权使用模型:claude-test"

// TestOpenAISDK runs npm openai against the gateway (issue 8 §1): the
// answers it parses and the error classes, codes and retries it sees.
// maxRetries 2 is the SDK's default, so a non-retryable status shows as
// exactly one attempt.
func TestOpenAISDK(t *testing.T) {
	requireNode(t)
	t.Parallel()
	w := newWorld(t)
	runScenarios(t, w, []scenario{
		{name: "chat", op: "openai.chat", key: keyMain, model: "gpt-test", maxRetries: 2,
			want: want{content: reply, usage: openAIUsage}},
		{name: "chat_stream", op: "openai.chat.stream", key: keyMain, model: "gpt-test", maxRetries: 2,
			want: want{content: reply, usage: openAIUsage}},
		{name: "embeddings", op: "openai.embeddings", key: keyMain, model: "embed-test", maxRetries: 2,
			want: want{dims: true, usage: map[string]int64{"prompt_tokens": 12, "total_tokens": 12}}},
		{name: "models_list", op: "openai.models", key: keyMain, maxRetries: 2,
			want: want{models: []string{"claude-test", "embed-test", "gpt-test"}}},
		{name: "models_list_allow_list", op: "openai.models", key: keyAllowList, maxRetries: 2,
			want: want{models: []string{"embed-test", "gpt-test"}}},

		{name: "invalid_key", op: "openai.chat", key: keyInvalid, model: "gpt-test", maxRetries: 2,
			want: want{class: "AuthenticationError", status: 401, code: "invalid_api_key", typ: "invalid_request_error"}},
		{name: "unknown_model", op: "openai.chat", key: keyMain, model: "no-such-model", maxRetries: 2,
			want: want{class: "NotFoundError", status: 404, code: "model_not_found"}},
		{name: "unknown_model_embeddings", op: "openai.embeddings", key: keyMain, model: "no-such-model", maxRetries: 2,
			want: want{class: "NotFoundError", status: 404, code: "model_not_found"}},
		{name: "model_outside_allow_list", op: "openai.chat", key: keyAllowList, model: "claude-test", maxRetries: 2,
			want: want{class: "PermissionDeniedError", status: 403, message: msgModelNotAllowed}},
		{name: "embeddings_on_anthropic_only_model", op: "openai.embeddings", key: keyMain, model: "claude-test", maxRetries: 2,
			want: want{class: "BadRequestError", status: 400, typ: "invalid_request_error"}},

		// 429 is retryable for both SDKs, so maxRetries 0 shows the answer
		// itself; the _default_retries case shows that a client on defaults
		// sends a refused call once: the gateway answers x-should-retry:
		// false, which both SDKs obey.
		{name: "balance_used_up", op: "openai.chat", key: keyBroke, model: "gpt-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, code: "insufficient_quota"}},
		{name: "balance_used_up_default_retries", op: "openai.chat", key: keyBroke, model: "gpt-test", maxRetries: 2,
			want: want{class: "RateLimitError", status: 429, code: "insufficient_quota"}},
		{name: "balance_too_low", op: "openai.chat", key: keyPoor, model: "gpt-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, code: "insufficient_quota"}},
		{name: "key_quota_exhausted", op: "openai.chat", key: keyExhausted, model: "gpt-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, code: "insufficient_quota"}},
		{name: "key_quota_too_low", op: "openai.chat", key: keyLow, model: "gpt-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, code: "insufficient_quota"}},
	})

	// Billing saw what the SDK saw: the three answered calls, with the
	// upstream's usage; the refused ones cost nothing.
	logs := w.g.AllConsumeLogs()
	if len(logs) != 3 {
		t.Fatalf("%d consume logs, want 3 (chat, stream, embeddings): %+v", len(logs), logs)
	}
	for _, l := range logs {
		if l.Username != "caller" || l.PromptTokens != 12 || (l.ModelName == "gpt-test") != (l.CompletionTokens == 8) {
			t.Errorf("consume log %+v", l)
		}
	}
}

// TestAnthropicSDK runs npm @anthropic-ai/sdk against the gateway's
// /v1/messages (issue 8 §1 and §3): answers through an Anthropic channel
// and, by conversion, an OpenAI one; errors in Anthropic's shape, which
// the SDK reads its err.type from.
func TestAnthropicSDK(t *testing.T) {
	requireNode(t)
	t.Parallel()
	w := newWorld(t)
	runScenarios(t, w, []scenario{
		{name: "messages_anthropic_channel", op: "anthropic.messages", key: keyMain, model: "claude-test", maxRetries: 2,
			want: want{content: reply, usage: claudeUsage}},
		{name: "messages_stream_anthropic_channel", op: "anthropic.messages.stream", key: keyMain, model: "claude-test", maxRetries: 2,
			want: want{content: reply, usage: claudeUsage}},
		{name: "messages_openai_channel", op: "anthropic.messages", key: keyMain, model: "gpt-test", maxRetries: 2,
			want: want{content: reply, usage: claudeUsage}},
		{name: "messages_stream_openai_channel", op: "anthropic.messages.stream", key: keyMain, model: "gpt-test", maxRetries: 2,
			want: want{content: reply, usage: claudeUsage}},
		{name: "count_tokens_anthropic_channel", op: "anthropic.count_tokens", key: keyMain, model: "claude-test", maxRetries: 2,
			want: want{count: true}},
		{name: "count_tokens_openai_channel", op: "anthropic.count_tokens", key: keyMain, model: "gpt-test", maxRetries: 2,
			want: want{count: true}},

		{name: "invalid_key", op: "anthropic.messages", key: keyInvalid, model: "claude-test", maxRetries: 2,
			want: want{class: "AuthenticationError", status: 401, typ: "authentication_error"}},
		{name: "unknown_model", op: "anthropic.messages", key: keyMain, model: "no-such-model", maxRetries: 2,
			want: want{class: "NotFoundError", status: 404, typ: "not_found_error"}},
		{name: "model_outside_allow_list", op: "anthropic.messages", key: keyAllowList, model: "claude-test", maxRetries: 2,
			want: want{class: "PermissionDeniedError", status: 403, typ: "permission_error", message: msgModelNotAllowed}},
		{name: "balance_used_up", op: "anthropic.messages", key: keyBroke, model: "claude-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, typ: "billing_error"}},
		{name: "key_quota_exhausted", op: "anthropic.messages", key: keyExhausted, model: "claude-test", maxRetries: 0,
			want: want{class: "RateLimitError", status: 429, typ: "billing_error"}},
		{name: "unknown_path_under_messages", op: "anthropic.batches", key: keyMain, model: "claude-test", maxRetries: 2,
			want: want{class: "NotFoundError", status: 404, typ: "not_found_error"}},
	})
}
