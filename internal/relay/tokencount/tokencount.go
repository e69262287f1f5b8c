// Package tokencount counts tokens locally, for the calls whose upstream
// reports no usage. It uses tiktoken's BPE (embedded, offline): o200k_base,
// or cl100k_base for the GPT-4/3.5 family. For other vendors' models the
// count is an estimate, and the consume log says so.
//
// The codecs come from tiktoken's codec package, not tokenizer.Get: Get
// switches over every encoding, so it links all five vocabularies (r50k
// and p50k, which no model here uses, add about 8 MB to the binary);
// naming the two constructors links only theirs. They are the same codecs
// Get returns, so counts are unchanged.
package tokencount

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// maxExact is the most text counted exactly; beyond it a length-based
// estimate is added, so one huge response cannot burn a core (BPE encodes
// only a few MB/s).
const maxExact = 256 << 10

// Counter counts tokens. The codecs are loaded on first use: they cost
// about 20 MB, which a gateway whose upstreams report usage never pays.
type Counter struct {
	o200kOnce, cl100kOnce sync.Once
	o200k, cl100k         *codec.Codec
}

// Preload loads the default encoding now, so the first call that needs a
// local count (typically a burst of streams cut off by their clients) does
// not wait for it, and the memory it takes is part of the steady state
// from the start rather than appearing later.
func (c *Counter) Preload() {
	c.o200kOnce.Do(func() { c.o200k = codec.NewO200kBase() })
}

// Count returns the number of tokens of text for model.
func (c *Counter) Count(model, text string) int64 {
	if text == "" {
		return 0
	}
	var enc *codec.Codec
	if strings.HasPrefix(model, "gpt-4-") || model == "gpt-4" || strings.HasPrefix(model, "gpt-3.5") {
		c.cl100kOnce.Do(func() { c.cl100k = codec.NewCl100kBase() })
		enc = c.cl100k
	} else {
		c.o200kOnce.Do(func() { c.o200k = codec.NewO200kBase() })
		enc = c.o200k
	}
	extra := int64(0)
	if len(text) > maxExact {
		extra = int64(len(text)-maxExact) / 4
		text = text[:maxExact]
	}
	n, err := enc.Count(text)
	if err != nil {
		return int64(len(text))/4 + extra
	}
	return int64(n) + extra
}
