package fakeupstream_test

import (
	"encoding/json"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// HonourLimit reports at most the request's completion limit, in every
// dialect's own field, and the full CompletionTokens without one.
func TestHonourLimit(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	gen := `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	for _, tc := range []struct {
		name, dialect, path, body string
		usage                     []string // where the completion count is
		want                      float64
	}{
		{"chat max_tokens", fakeupstream.OpenAI, "/v1/chat/completions", `{"model":"m",` + msgs + `,"max_tokens":50}`, []string{"usage", "completion_tokens"}, 50},
		{"chat max_completion_tokens", fakeupstream.OpenAI, "/v1/chat/completions", `{"model":"m",` + msgs + `,"max_completion_tokens":40}`, []string{"usage", "completion_tokens"}, 40},
		{"chat open", fakeupstream.OpenAI, "/v1/chat/completions", `{"model":"m",` + msgs + `}`, []string{"usage", "completion_tokens"}, 20000},
		{"completions", fakeupstream.OpenAI, "/v1/completions", `{"model":"m","prompt":"hi","max_tokens":30}`, []string{"usage", "completion_tokens"}, 30},
		{"responses", fakeupstream.OpenAI, "/v1/responses", `{"model":"m","input":"hi","max_output_tokens":20}`, []string{"usage", "output_tokens"}, 20},
		{"anthropic", fakeupstream.Anthropic, "/v1/messages", `{"model":"m",` + msgs + `,"max_tokens":10}`, []string{"usage", "output_tokens"}, 10},
		{"gemini", fakeupstream.Gemini, "/v1beta/models/g:generateContent", `{` + gen + `,"generationConfig":{"maxOutputTokens":5}}`, []string{"usageMetadata", "candidatesTokenCount"}, 5},
		{"gemini open", fakeupstream.Gemini, "/v1beta/models/g:generateContent", `{` + gen + `}`, []string{"usageMetadata", "candidatesTokenCount"}, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeupstream.New(t)
			s.SetBehavior(fakeupstream.Behavior{CompletionTokens: 20000, HonourLimit: true})
			var got map[string]any
			decode(t, send(t, s, call{path: tc.path, dialect: tc.dialect, body: tc.body}), 200, &got)
			var v any = got
			for _, k := range tc.usage {
				m, _ := v.(map[string]any)
				v = m[k]
			}
			if v != tc.want {
				raw, _ := json.Marshal(got)
				t.Fatalf("completion tokens %v, want %v: %s", v, tc.want, raw)
			}
		})
	}
}
