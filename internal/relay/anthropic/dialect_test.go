package anthropic

import "testing"

func TestNativeURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"},
		{"https://proxy.example/v1", "/v1/messages", "https://proxy.example/v1/messages"},
		{"https://api.anthropic.com/", "/v1/messages/count_tokens", "https://api.anthropic.com/v1/messages/count_tokens"},
		{"https://proxy.example/v1", "/v1/messages/count_tokens", "https://proxy.example/v1/messages/count_tokens"},
	} {
		if got := (Dialect{}).NativeURL(tc.base, tc.path, "claude", true); got != tc.want {
			t.Errorf("NativeURL(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}
