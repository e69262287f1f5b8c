package relay

import (
	"strings"
	"testing"
)

func TestRedactSecrets(t *testing.T) {
	t.Parallel()
	u := &upstream{Key: "chan-key-0001", BaseURL: "https://proxyuser:proxypass@up.example/v1"}
	tests := []struct{ in, want string }{
		{"Incorrect API key provided: chan-key-0001.", "Incorrect API key provided: ***."},
		{"Authorization: Bearer abc.def-123", "Authorization: Bearer ***"},
		{"bad key sk-proj-AbC123_xyz-789 given", "bad key sk-*** given"},
		{"anthropic sk-ant-api03-XYZ", "anthropic sk-***"},
		{"GET /v1beta/models?alt=sse&key=AIzaSyQWERTY123456 failed", "GET /v1beta/models?alt=sse&key=*** failed"},
		{`{"api_key": "s3cr3t"}`, `{"api_key": "***"}`},
		{`{"message":"x-api-key=\"s3cr3t\""}`, `{"message":"x-api-key=\"***\""}`},
		{"dial https://proxyuser:proxypass@up.example/v1: refused", "dial https://***@up.example/v1: refused"},
		{"plain upstream overloaded", "plain upstream overloaded"},
	}
	for _, tt := range tests {
		if got := redactSecrets(tt.in, u); got != tt.want {
			t.Errorf("redactSecrets(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The base URL's password alone, wherever it appears.
	if got := redactSecrets("pw proxypass here", u); strings.Contains(got, "proxypass") {
		t.Errorf("base URL password kept: %q", got)
	}
}

// Stored texts are valid UTF-8 without NUL and bounded, whatever the
// upstream sent.
func TestErrorTextsAreCleaned(t *testing.T) {
	t.Parallel()
	raw := "bad\x00 \xff\xfe bytes " + strings.Repeat("é", 5000)
	got := upstreamErrorText.Clean(raw)
	if strings.ContainsRune(got, 0) || !strings.HasPrefix(got, "bad  bytes") || len([]rune(got)) > 2048 {
		t.Fatalf("cleaned = %q…", got[:min(len(got), 40)])
	}
	if c := errorContentText.Clean(strings.Repeat("x", 5000)); len(c) != 1024 {
		t.Fatalf("content cut to %d chars, want 1024", len(c))
	}
}
