//go:build ignore

// gen_vocab writes o200k_base.vocab and cl100k_base.vocab from the
// vocabularies of github.com/tiktoken-go/tokenizer (go generate, in this
// directory). A file is the length of what follows once inflated, as a
// uvarint (the loader allocates it once), then flate-compressed: the
// number of tokens as a uvarint, then each token's length in one byte, in rank order from 0,
// then the tokens' bytes in the same order (lengths apart from bytes
// compress better: 1.02 MB and 0.43 MB, where the library's map literals
// take 8.7 MB of the binary). The ranks
// must be dense (the library's Decode fails at the first gap), which
// TestVocabulariesMatchLibrary checks again over all ranks.
package main

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"log"
	"os"

	"github.com/tiktoken-go/tokenizer/codec"
)

func main() {
	write("o200k_base.vocab", codec.NewO200kBase())
	write("cl100k_base.vocab", codec.NewCl100kBase())
}

func write(name string, c *codec.Codec) {
	var lens, body bytes.Buffer
	n := 0
	for ; ; n++ {
		tok, err := c.Decode([]uint{uint(n)})
		if err != nil {
			break
		}
		if len(tok) == 0 || len(tok) > 255 {
			log.Fatalf("%s: token %d is %d bytes, outside 1..255", name, n, len(tok))
		}
		lens.WriteByte(byte(len(tok)))
		body.WriteString(tok)
	}
	raw := bytes.NewBuffer(binary.AppendUvarint(nil, uint64(n)))
	raw.Write(lens.Bytes())
	raw.Write(body.Bytes())
	out := bytes.NewBuffer(binary.AppendUvarint(nil, uint64(raw.Len())))
	w, err := flate.NewWriter(out, flate.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Write(raw.Bytes()); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d tokens, %d bytes raw, %d compressed", name, n, raw.Len(), out.Len())
}
