package gemini

import "testing"

func TestEndpoint(t *testing.T) {
	tests := []struct {
		base, model string
		stream      bool
		want        string
	}{
		{DefaultBaseURL, "gemini-2.5-flash", false,
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"},
		{DefaultBaseURL, "gemini-2.5-flash", true,
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"https://proxy.test/", "gemini-pro", false, "https://proxy.test/v1beta/models/gemini-pro:generateContent"},
		{"https://proxy.test/v1beta", "gemini-pro", true,
			"https://proxy.test/v1beta/models/gemini-pro:streamGenerateContent?alt=sse"},
		{"https://proxy.test/v1beta/", "gemini-pro", false, "https://proxy.test/v1beta/models/gemini-pro:generateContent"},
		{"https://proxy.test/google", "models/gemini-pro", false,
			"https://proxy.test/google/v1beta/models/gemini-pro:generateContent"},
		{"https://proxy.test", "../../admin?x=1#y", false,
			"https://proxy.test/v1beta/models/..%2F..%2Fadmin%3Fx=1%23y:generateContent"},
		{"https://proxy.test", "tuned model", false, "https://proxy.test/v1beta/models/tuned%20model:generateContent"},
	}
	for _, tt := range tests {
		if got := Endpoint(tt.base, tt.model, tt.stream); got != tt.want {
			t.Errorf("Endpoint(%q, %q, %v)\n got %s\nwant %s", tt.base, tt.model, tt.stream, got, tt.want)
		}
	}
}
