package relay

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

func TestPromptTokenBound(t *testing.T) {
	t.Parallel()
	plain := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	b64 := strings.Repeat("QUJD", 1000)
	image := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`
	anthropicB64 := `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}}]}]}`
	anthropic := `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		// Text: every byte may be a token.
		{"text", plain, int64(len(plain)) + promptOverhead},
		// A data URL's payload is not text; the image part gets a media
		// allowance (its "image_url" key is not a second part).
		{"data url", image, int64(len(image)-len(b64)) + mediaPartTokens + promptOverhead},
		{"two parts, spaced", `{"content": [{"type": "image_url", "image_url" : {"url": "u"}}, {"type": "input_audio"}]}`,
			int64(len(`{"content": [{"type": "image_url", "image_url" : {"url": "u"}}, {"type": "input_audio"}]}`)) + 2*mediaPartTokens + promptOverhead},
		{"image by url", anthropic, int64(len(anthropic)) + mediaPartTokens + promptOverhead},
		// Anthropic's base64 source: the "data" payload is left out.
		{"anthropic base64", anthropicB64, int64(len(anthropicB64)-len(b64)) + mediaPartTokens + promptOverhead},
		// Short "data" values, and runs that do not end the string, are text.
		{"short data", `{"data":"QUJD"}`, int64(len(`{"data":"QUJD"}`)) + promptOverhead},
		{"data url inside text", `{"text":"see data:image/png;base64,QUJD here"}`, int64(len(`{"text":"see data:image/png;base64,QUJD here"}`)) + promptOverhead},
		{"escaped quote", `{"data":"` + b64 + `\"x"}`, int64(len(`{"data":"`+b64+`\"x"}`)) + promptOverhead},
		{"unterminated base64", `{"x":";base64,AAAA`, int64(len(`{"x":";base64,AAAA`)) + promptOverhead},
	} {
		if got := promptTokenBound([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: bound %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestIsReasoningModel(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]bool{"o1": true, "o3-mini": true, "o4-mini-high": true, "gpt-5": true,
		"openai/o3": true, "GPT-5-mini": true, "gpt-4o": false, "gpt-4.1": false, "claude-sonnet-4": false, "omni": false} {
		if got := openai.IsReasoningModel(model); got != want {
			t.Errorf("openai.IsReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}
