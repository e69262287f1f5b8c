package bedrock_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status    int
		errorType string
		body      string
		want      refusal.Kind
	}{
		{403, "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/", `{"message":"The security token included in the request is invalid."}`, refusal.Key},
		{403, "InvalidSignatureException", `{"message":"Signature expired"}`, refusal.Key},
		{403, "ExpiredTokenException", `{"message":"The security token included in the request is expired"}`, refusal.Key},
		{403, "AccessDeniedException", `{"Message":"User: arn:aws:iam::1:user/x is not authorized to perform: bedrock:InvokeModel"}`, refusal.Key},
		{403, "AccessDeniedException", `{"message":"You don't have access to the model with the specified model ID."}`, refusal.Request},
		{403, "", `{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"bad"}`, refusal.Key},
		{429, "ThrottlingException", `{"message":"Too many requests, please wait before trying again."}`, refusal.Throttled},
		{429, "ServiceQuotaExceededException", `{}`, refusal.Throttled},
		{429, "ModelNotReadyException", `{}`, refusal.Upstream},
		{400, "ValidationException", `{"message":"messages: field required"}`, refusal.Request},
		{404, "ResourceNotFoundException", `{"message":"Could not resolve the foundation model"}`, refusal.Request},
		{408, "ModelTimeoutException", `{}`, refusal.Upstream},
		{503, "ServiceUnavailableException", `{}`, refusal.Upstream},
		{500, "", `<html>`, refusal.Upstream},
		{401, "", ``, refusal.Key},
		{429, "", ``, refusal.Throttled},
		{413, "", ``, refusal.Request},
	} {
		h := http.Header{}
		if tc.errorType != "" {
			h.Set("x-amzn-ErrorType", tc.errorType)
		}
		if got := bedrock.Classify(tc.status, h, []byte(tc.body)); got.Kind != tc.want {
			t.Errorf("Classify(%d, %q, %s) = %+v, want %v", tc.status, tc.errorType, tc.body, got, tc.want)
		}
	}
}

func TestFromChatRequestRefusals(t *testing.T) {
	for name, chat := range map[string]string{
		"no messages":           `{"messages":[{"role":"system","content":"s"}]}`,
		"image by URL":          `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
		"bad arguments":         `{"messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		"tool history no tools": `{"messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		"unknown role":          `{"messages":[{"role":"wizard","content":"a"}]}`,
		"bad tool_choice":       `{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var req openaiChat
			if err := req.decode(chat); err != nil {
				t.Fatal(err)
			}
			if _, err := bedrock.FromChatRequest(&req.ChatRequest); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

type openaiChat struct{ openai.ChatRequest }

func (c *openaiChat) decode(s string) error { return json.Unmarshal([]byte(s), &c.ChatRequest) }

func TestConverseUsageLimits(t *testing.T) {
	const maxInt = int64(^uint64(0) >> 1)
	for _, tc := range []struct {
		in                    bedrock.ConverseUsage
		prompt, cached, total int64
	}{
		{bedrock.ConverseUsage{InputTokens: 10, CacheReadInputTokens: 5, CacheWriteInputTokens: 2, OutputTokens: 3}, 17, 5, 20},
		{bedrock.ConverseUsage{InputTokens: -10, CacheReadInputTokens: -1, OutputTokens: -3}, 0, 0, 0},
		{bedrock.ConverseUsage{InputTokens: maxInt, CacheReadInputTokens: maxInt, OutputTokens: maxInt}, maxInt, maxInt, maxInt},
	} {
		u := tc.in.OpenAIUsage()
		if u.PromptTokens != tc.prompt || u.Cached() != tc.cached || u.TotalTokens != tc.total || u.CompletionTokens < 0 {
			t.Errorf("%+v → %+v", tc.in, u)
		}
	}
}
