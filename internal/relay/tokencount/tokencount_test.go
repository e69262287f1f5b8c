package tokencount

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"
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

// libraryEncodings are tiktoken-go's codecs for the embedded vocabularies.
var libraryEncodings = []struct {
	model   string
	name    tokenizer.Encoding
	vocab   []byte
	pattern string
}{
	{"gpt-4o", tokenizer.O200kBase, o200kVocab, o200kPattern},
	{"gpt-4", tokenizer.Cl100kBase, cl100kVocab, cl100kPattern},
}

// The embedded vocabularies are exactly tiktoken-go's: every rank holds
// the library's token, and the library has no token past the last rank
// (its Decode fails for every id without one).
func TestVocabulariesMatchLibrary(t *testing.T) {
	for _, enc := range libraryEncodings {
		ref, err := tokenizer.Get(enc.name)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := loadEncoding(enc.vocab, enc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", enc.name, err)
		}
		byRank := ours.ranks.byRank()
		for r, tok := range byRank {
			want, err := ref.Decode([]uint{uint(r)})
			if err != nil || tok != want {
				t.Fatalf("%s: rank %d is %q, library has %q (%v)", enc.name, r, tok, want, err)
			}
		}
		for id := len(byRank); id < len(byRank)+300000; id++ {
			if got, err := ref.Decode([]uint{uint(id)}); err == nil {
				t.Fatalf("%s: library has token %d (%q) past the embedded %d", enc.name, id, got, len(byRank))
			}
		}
	}
}

// countCorpus is text of every kind the split patterns tell apart, plus
// pieces longer than tiktoken-go's heap threshold (96 bytes) and invalid
// UTF-8, from a fixed seed so a failure reproduces.
func countCorpus() []string {
	texts := []string{"hello world", "Hello, how are you today?", "你好,世界!这是一个测试。",
		"func main() {\n\tfmt.Println(\"x\")\n}\n", strings.Repeat("emoji 🎉 ", 50), "<|endoftext|> plain",
		"I'm sure they've said we'll DON'T it's", "   \n\n  \t x  \r\n", "1234567890 3.14159 1e10",
		strings.Repeat("a", 1000), strings.Repeat("ab", 700), "\xff\xfe invalid \xc3 utf8 \xe4\xbd",
		strings.Repeat("Supercalifragilisticexpialidocious", 20), "https://example.com/a/b?c=d&e=f#g",
		"Ünïcödé façade naïve coöperate", "Привет, мир! Как дела?", "مرحبا بالعالم", "こんにちは世界、カタカナ",
	}
	alphabet := []string{"a", "e", "t", "Q", "Z", "1", "9", " ", "  ", "\n", "\t", "'", "'s", ",", ".", "!", "/",
		"é", "ß", "中", "文", "🎉", "👍🏽", "\u200d", "\xff", "\x00", "—", "«", "»", "ق", "ж", "ℝ"}
	rng := rand.New(rand.NewPCG(27, 1))
	for range 300 {
		var b strings.Builder
		for range rng.IntN(400) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// The counts are tiktoken-go's, through tokenizer.Get (all its encodings)
// and the codec constructors alike.
func TestCountsMatchLibrary(t *testing.T) {
	var c Counter
	texts := countCorpus()
	for _, enc := range libraryEncodings {
		ref, err := tokenizer.Get(enc.name)
		if err != nil {
			t.Fatal(err)
		}
		direct := codec.NewO200kBase()
		if enc.name == tokenizer.Cl100kBase {
			direct = codec.NewCl100kBase()
		}
		for _, text := range texts {
			want, err := ref.Count(text)
			if err != nil {
				t.Fatal(err)
			}
			if w2, _ := direct.Count(text); w2 != want {
				t.Fatalf("library disagrees with itself on %q: %d, %d", text, want, w2)
			}
			if got := c.Count(enc.model, text); got != int64(want) {
				t.Errorf("%s: Count(%q) = %d, tiktoken-go counts %d", enc.name, text, got, want)
			}
		}
	}
}

// A corrupt vocabulary is refused, not loaded short or shifted.
func TestLoadEncodingRejectsCorruptVocabulary(t *testing.T) {
	deflate := func(raw []byte) []byte {
		b := bytes.NewBuffer(binary.AppendUvarint(nil, uint64(len(raw))))
		w, _ := flate.NewWriter(b, flate.BestSpeed)
		w.Write(raw)
		w.Close()
		return b.Bytes()
	}
	tests := map[string][]byte{
		"no length":       nil,
		"huge length":     binary.AppendUvarint(nil, 1<<40),
		"not flate":       append(binary.AppendUvarint(nil, 11), "plain bytes"...),
		"short of length": append(binary.AppendUvarint(nil, 9), deflate([]byte{0x02, 1, 1, 'a', 'b'})[1:]...),
		"empty":           deflate(nil),
		"count too large": deflate([]byte{0x05, 1, 1}),
		"truncated":       deflate([]byte{0x02, 1, 2, 'a', 'b'}),
		"trailing bytes":  deflate([]byte{0x02, 1, 1, 'a', 'b', 'c'}),
		"repeated token":  deflate([]byte{0x02, 1, 1, 'a', 'a'}),
		"empty token":     deflate([]byte{0x02, 1, 0, 'a'}),
	}
	for name, data := range tests {
		if _, err := loadEncoding(data, cl100kPattern); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if e, err := loadEncoding(deflate([]byte{0x02, 1, 1, 'a', 'b'}), cl100kPattern); err != nil || !hasRank(e, "b", 1) {
		t.Fatalf("valid two-token vocabulary: %v, %v", e, err)
	}
	// Merges go lowest rank first: with "ab" ranked below "bc", "abc" is
	// ab+c, two tokens.
	e, err := loadEncoding(deflate([]byte{0x05, 1, 1, 1, 2, 2, 'a', 'b', 'c', 'a', 'b', 'b', 'c'}), cl100kPattern)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.mergedParts("abc"); got != 2 {
		t.Fatalf("abc merged into %d parts, want 2", got)
	}
}

func hasRank(e *encoding, tok string, want uint32) bool {
	r, ok := e.ranks.rank(tok)
	return ok && r == want
}

// byRank lists the table's tokens in rank order.
func (t *rankTable) byRank() []string {
	out := make([]string, t.n)
	for _, s := range t.slots {
		if s != 0 {
			out[s&(1<<rankBits-1)] = t.at(s)
		}
	}
	return out
}

// The rank table answers as a map of the same tokens would, for every
// token and for pieces that are not tokens (prefixes, extensions, empty,
// longer than any length byte), and a lookup allocates nothing.
func TestRankTableMatchesMap(t *testing.T) {
	e, err := loadEncoding(o200kVocab, o200kPattern)
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[string]uint32)
	for r, tok := range e.ranks.byRank() {
		want[tok] = uint32(r)
	}
	probes := []string{"", strings.Repeat("a", 255), strings.Repeat(" ", 300)}
	for tok := range want {
		probes = append(probes, tok, tok+"\x00", tok[:len(tok)-1], "x"+tok)
	}
	for _, text := range countCorpus() {
		for i := 0; i+3 <= len(text); i += 3 {
			probes = append(probes, text[i:i+3], text[i:min(len(text), i+8)])
		}
	}
	for _, p := range probes {
		r, ok := e.ranks.rank(p)
		w, wok := want[p]
		if ok != wok || r != w {
			t.Fatalf("rank(%q) = %d, %v; a map says %d, %v", p, r, ok, w, wok)
		}
	}
	if a := testing.AllocsPerRun(100, func() { e.ranks.rank("hello") }); a != 0 {
		t.Fatalf("a lookup allocates %.0f times", a)
	}
}
