package tokencount

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	var c Counter
	tests := []struct {
		model, text string
		want        int64
	}{
		{"gpt-4o", "", 0},
		{"gpt-4o", "hello world", 2},
		{"gpt-3.5-turbo", "hello world", 2},
		{"claude-sonnet-4", "Hello, how are you today?", 7},
	}
	for _, tt := range tests {
		if got := c.Count(tt.model, tt.text); got != tt.want {
			t.Errorf("Count(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
	// Beyond the exact bound the count keeps growing with the length.
	small := c.Count("gpt-4o", strings.Repeat("word ", maxExact/5))
	big := c.Count("gpt-4o", strings.Repeat("word ", maxExact/5*3))
	if big <= small {
		t.Fatalf("huge text counted %d, not more than %d", big, small)
	}
}
