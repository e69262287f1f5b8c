// Package tokencount counts tokens locally, for the calls whose upstream
// reports no usage. It uses tiktoken's BPE (embedded, offline): o200k_base,
// or cl100k_base for the GPT-4/3.5 family. For other vendors' models the
// count is an estimate, and the consume log says so.
//
// The vocabularies are embedded compressed (o200k_base.vocab and
// cl100k_base.vocab, written from tiktoken-go's by gen_vocab.go) and
// counted by bpe.go, not by tiktoken-go's codec: its vocabularies are Go
// map literals, 8.7 MB of the binary for these two, where the compressed
// files are 1.4 MB (docs/performance.md, Binary size). The tests check
// that every rank holds the library's token and that counts match it.
package tokencount

import (
	_ "embed"
	"strings"
	"sync"

	// The codec package's init registers the compiled engines of the
	// split patterns with regexp2 (bpe.go). Nothing else of it is linked:
	// its vocabularies are reached only through its constructors.
	_ "github.com/tiktoken-go/tokenizer/codec"
)

//go:generate go run gen_vocab.go

var (
	//go:embed o200k_base.vocab
	o200kVocab []byte
	//go:embed cl100k_base.vocab
	cl100kVocab []byte
)

// maxExact is the most text counted exactly; beyond it a length-based
// estimate is added, so one huge response cannot burn a core (BPE encodes
// only a few MB/s).
const maxExact = 256 << 10

// Counter counts tokens. The encodings are loaded on first use: the
// default one takes about 5.3 MiB of heap (cl100k 2.6), which a gateway
// whose upstreams report usage never pays for cl100k; neither holds a
// pointer per token (rankTable).
type Counter struct {
	o200kOnce, cl100kOnce sync.Once
	o200k, cl100k         *encoding
}

// Preload loads the default encoding now, so the first call that needs a
// local count (typically a burst of streams cut off by their clients) does
// not wait for it, and the memory it takes is part of the steady state
// from the start rather than appearing later.
func (c *Counter) Preload() {
	c.o200kOnce.Do(func() { c.o200k = mustLoad(o200kVocab, o200kPattern) })
}

// mustLoad decodes an embedded vocabulary. It fails only on a corrupt
// embedded file, which TestVocabulariesMatchLibrary rules out; were it to,
// Count falls back to its length estimate rather than panic in a request.
func mustLoad(vocab []byte, pattern string) *encoding {
	e, err := loadEncoding(vocab, pattern)
	if err != nil {
		return nil
	}
	return e
}

// Count returns the number of tokens of text for model.
func (c *Counter) Count(model, text string) int64 {
	if text == "" {
		return 0
	}
	var enc *encoding
	if strings.HasPrefix(model, "gpt-4-") || model == "gpt-4" || strings.HasPrefix(model, "gpt-3.5") {
		c.cl100kOnce.Do(func() { c.cl100k = mustLoad(cl100kVocab, cl100kPattern) })
		enc = c.cl100k
	} else {
		c.o200kOnce.Do(func() { c.o200k = mustLoad(o200kVocab, o200kPattern) })
		enc = c.o200k
	}
	extra := int64(0)
	if len(text) > maxExact {
		extra = int64(len(text)-maxExact) / 4
		text = text[:maxExact]
	}
	if enc == nil {
		return int64(len(text))/4 + extra
	}
	n, err := enc.count(text)
	if err != nil {
		return int64(len(text))/4 + extra
	}
	return int64(n) + extra
}
