package relay

import (
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

func TestCollectText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		keys     map[string]bool
		want     string
	}{
		{"chat request", `{"model":"m","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":[{"type":"text","text":"hi there"}]}]}`,
			promptKeys, "hello hi there"},
		{"array input", `{"input":["a","b"],"model":"x"}`, promptKeys, "a b"},
		{"chunk delta", `{"choices":[{"delta":{"content":"par"}}]}`, completionKeys, "par"},
		{"numbers and nulls are skipped", `{"content":null,"text":3,"prompt":"p"}`, promptKeys, "p"},
		{"keys outside the set", `{"role":"user","model":"gpt"}`, promptKeys, ""},
		{"invalid json stops quietly", `{"content":"a",`, promptKeys, "a"},
	}
	for _, tt := range tests {
		if got := collectText([]byte(tt.in), tt.keys); got != tt.want {
			t.Errorf("%s: collectText = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestJoinURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ base, path, want string }{
		{"https://api.openai.com", "/v1/chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"https://host/proxy/v1", "/v1/embeddings", "https://host/proxy/v1/embeddings"},
		{"http://127.0.0.1:8000", "/v1/audio/speech", "http://127.0.0.1:8000/v1/audio/speech"},
	}
	for _, tt := range tests {
		if got := openai.JoinURL(tt.base, tt.path); got != tt.want {
			t.Errorf("openai.JoinURL(%q, %q) = %q, want %q", tt.base, tt.path, got, tt.want)
		}
	}
}

// pick honours priority tiers, skips, and weights (zero weight only as a
// last resort within a tier).
func TestPick(t *testing.T) {
	t.Parallel()
	a, b, c, d := &upstream{ID: 1}, &upstream{ID: 2}, &upstream{ID: 3}, &upstream{ID: 4}
	tiers := []tier{
		{priority: 10, channels: []*upstream{a, b}, weights: []int64{1, 3}},
		{priority: 0, channels: []*upstream{c, d}, weights: []int64{0, 0}},
	}
	none := func(*upstream) bool { return false }
	counts := map[int64]int{}
	for range 4000 {
		counts[pick(tiers, none).ID]++
	}
	if counts[3]+counts[4] != 0 || counts[1] < 700 || counts[1] > 1300 || counts[2] < 2700 {
		t.Fatalf("distribution %v, want tier 10 only, about 1:3", counts)
	}
	skipTop := func(u *upstream) bool { return u.ID <= 2 }
	if got := pick(tiers, skipTop); got != c && got != d {
		t.Fatalf("with the top tier skipped got %v", got)
	}
	if got := pick(tiers, func(*upstream) bool { return true }); got != nil {
		t.Fatalf("all skipped: got %v", got)
	}
}

func TestInjectField(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"model":"m","stream":true}`, `{"f":1,"model":"m","stream":true}`},
		{` { "model":"m"}`, ` {"f":1, "model":"m"}`},
		{`{}`, `{"f":1}`},
		{`{ }`, `{"f":1 }`},
	}
	for _, tt := range tests {
		if got := string(injectField([]byte(tt.in), `"f":1`)); got != tt.want {
			t.Errorf("injectField(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
