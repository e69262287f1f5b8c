package gemini

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestToChatResponseGolden(t *testing.T) {
	for in, out := range cases(t, "response", ".json") {
		t.Run(in, func(t *testing.T) {
			var resp GenerateResponse
			decodeFile(t, in, &resp, false)
			got, err := ToChatResponse(&resp, "gemini-flash", "chatcmpl-7Xq2", 1760000000)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, out, got)
		})
	}
}

// The relay tells a refused prompt from an upstream failure by the error's
// type, so the type is part of the contract.
func TestBlockedPrompt(t *testing.T) {
	var resp GenerateResponse
	body := `{"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}]},
	 "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8}, "modelVersion": "gemini-2.5-flash"}`
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	_, err := ToChatResponse(&resp, "m", "id", 1)
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Reason != "SAFETY" {
		t.Fatalf("err = %v, want a *BlockedError with reason SAFETY", err)
	}
	if got, want := err.Error(), "prompt blocked by gemini: SAFETY"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}

	// No candidates and no block reason is an upstream fault, not a refusal.
	_, err = ToChatResponse(&GenerateResponse{}, "m", "id", 1)
	if err == nil || errors.As(err, &blocked) {
		t.Fatalf("empty response: err = %v, want a plain error", err)
	}
	if _, err := ToChatResponse(nil, "m", "id", 1); err == nil {
		t.Fatal("nil response: no error")
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		reason      string
		calledTools bool
		want        string
	}{
		{"STOP", false, "stop"},
		{"STOP", true, "tool_calls"},
		{"MAX_TOKENS", false, "length"},
		{"MAX_TOKENS", true, "length"},
		{"SAFETY", false, "content_filter"},
		{"RECITATION", false, "content_filter"},
		{"BLOCKLIST", false, "content_filter"},
		{"PROHIBITED_CONTENT", false, "content_filter"},
		{"SPII", false, "content_filter"},
		{"IMAGE_SAFETY", false, "content_filter"},
		{"SAFETY", true, "content_filter"},
		{"MALFORMED_FUNCTION_CALL", false, "stop"},
		{"LANGUAGE", false, "stop"},
		{"OTHER", false, "stop"},
		{"FINISH_REASON_UNSPECIFIED", false, "stop"},
		{"SOMETHING_NEW", true, "stop"},
	}
	for _, tt := range tests {
		if got := finishReason(tt.reason, tt.calledTools); got != tt.want {
			t.Errorf("finishReason(%q, %v) = %q, want %q", tt.reason, tt.calledTools, got, tt.want)
		}
	}
}

func TestUsageOf(t *testing.T) {
	tests := []struct {
		name                      string
		meta                      *UsageMetadata
		prompt, completion, total int64
		cached                    int64
	}{
		{"none", nil, 0, 0, 0, 0},
		{"total given", &UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, ThoughtsTokenCount: 7, TotalTokenCount: 22, CachedContentTokenCount: 4}, 10, 12, 22, 4},
		{"total summed", &UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, ThoughtsTokenCount: 7}, 10, 12, 22, 0},
	}
	for _, tt := range tests {
		u := UsageOf(&GenerateResponse{UsageMetadata: tt.meta})
		if u.PromptTokens != tt.prompt || u.CompletionTokens != tt.completion || u.TotalTokens != tt.total || u.Cached() != tt.cached {
			t.Errorf("%s: got %+v (cached %d), want prompt %d completion %d total %d cached %d",
				tt.name, u, u.Cached(), tt.prompt, tt.completion, tt.total, tt.cached)
		}
	}
	if u := UsageOf(nil); u.TotalTokens != 0 {
		t.Errorf("UsageOf(nil) = %+v", u)
	}
}
