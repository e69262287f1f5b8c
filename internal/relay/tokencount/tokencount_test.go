package tokencount

import (
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
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

// The codecs built directly (to link only two vocabularies) count as the
// library's tokenizer.Get codecs did before.
func TestCountsMatchTokenizerGet(t *testing.T) {
	var c Counter
	texts := []string{"hello world", "Hello, how are you today?", "你好,世界!这是一个测试。",
		"func main() {\n\tfmt.Println(\"x\")\n}\n", strings.Repeat("emoji 🎉 ", 50), "<|endoftext|> plain"}
	for _, enc := range []struct {
		model    string
		encoding tokenizer.Encoding
	}{{"gpt-4o", tokenizer.O200kBase}, {"gpt-4", tokenizer.Cl100kBase}} {
		ref, err := tokenizer.Get(enc.encoding)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			want, err := ref.Count(text)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Count(enc.model, text); got != int64(want) {
				t.Errorf("%s: Count(%q) = %d, tokenizer.Get(%s) counts %d", enc.model, text, got, enc.encoding, want)
			}
		}
	}
}
