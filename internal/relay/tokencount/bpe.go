package tokencount

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dlclark/regexp2/v2"
)

// encoding is one tiktoken byte-pair encoding, for counting: a text is
// split by the encoding's pattern, and each piece that is not a token is
// merged from its bytes, lowest rank first, leftmost among equal ranks.
// It counts as tiktoken-go's codec does (TestCountsMatchLibrary), which
// ignores special tokens in Count: "<|endoftext|>" is ordinary text.
type encoding struct {
	ranks *rankTable
	split *regexp2.Regexp
}

// The split patterns of tiktoken-go's NewO200kBase and NewCl100kBase. The
// codec package's init registers a compiled engine for each (the blank
// import in tokencount.go), which MustCompile then returns.
const (
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// loadEncoding decodes a vocabulary written by gen_vocab.go: its inflated
// length, then, compressed, a uvarint token count, one length byte per
// token in rank order, and the tokens' bytes in the same order. It is
// inflated into one string of that length, and the tokens are slices of
// it (rankTable): no garbage of a growing buffer left in the heap of an
// idle gateway, and nothing for the collector to follow.
func loadEncoding(data []byte, pattern string) (*encoding, error) {
	size, k := binary.Uvarint(data)
	if k <= 0 || size > 64<<20 {
		return nil, errors.New("vocabulary: bad length")
	}
	var sb strings.Builder
	sb.Grow(int(size))
	if _, err := io.Copy(&sb, flate.NewReader(bytes.NewReader(data[k:]))); err != nil {
		return nil, fmt.Errorf("inflate vocabulary: %w", err)
	}
	if uint64(sb.Len()) != size {
		return nil, errors.New("vocabulary: length differs from its header")
	}
	raw := sb.String()
	n, k := binary.Uvarint([]byte(raw[:min(len(raw), binary.MaxVarintLen64)]))
	if k <= 0 || n > uint64(len(raw)-k) || n > math.MaxUint32 {
		return nil, errors.New("vocabulary: bad token count")
	}
	lens, body := raw[k:k+int(n)], raw[k+int(n):]
	ranks, err := newRankTable(body, len(lens))
	if err != nil {
		return nil, err
	}
	off := 0
	for rank := range len(lens) {
		l := int(lens[rank])
		if off+l > len(body) {
			return nil, errors.New("vocabulary: truncated")
		}
		if err := ranks.add(off, l, uint32(rank)); err != nil {
			return nil, err
		}
		off += l
	}
	if off != len(body) {
		return nil, errors.New("vocabulary: trailing bytes")
	}
	return &encoding{ranks: ranks, split: regexp2.MustCompile(pattern, regexp2.None)}, nil
}

// count returns the number of tokens of text.
func (e *encoding) count(text string) (int, error) {
	n := 0
	m, err := e.split.FindStringMatch(text)
	for m != nil && err == nil {
		piece := m.String()
		if _, ok := e.ranks.rank(piece); ok {
			n++
		} else {
			n += e.mergedParts(piece)
		}
		m, err = e.split.FindNextMatch(m)
	}
	return n, err
}

// noRank marks a boundary whose part cannot merge with the next one (or
// that a merge removed).
const noRank = math.MaxUint32

// mergedParts returns how many tokens byte-pair encoding merges piece
// into. The parts are a linked list of boundaries; a min-heap of (rank,
// offset) candidates gives the lowest-ranked, then leftmost, adjacent pair
// in O(n log n), so a long piece without spaces cannot cost O(n^2).
// Candidates made stale by a merge are skipped when popped.
func (e *encoding) mergedParts(piece string) int {
	n := int32(len(piece))
	next := make([]int32, n+1)
	prev := make([]int32, n+1)
	rank := make([]uint32, n+1)
	for i := range next {
		next[i], prev[i], rank[i] = int32(i)+1, int32(i)-1, noRank
	}
	next[n] = -1
	rankOf := func(i int32) uint32 {
		j := next[i]
		if j < 0 || next[j] < 0 {
			return noRank
		}
		if r, ok := e.ranks.rank(piece[i:next[j]]); ok {
			return r
		}
		return noRank
	}
	h := make(candidates, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if rank[i] = rankOf(i); rank[i] != noRank {
			h = append(h, candidate{rank[i], i})
		}
	}
	h.init()
	parts := int(n)
	for len(h) > 0 {
		top := h.pop()
		i := top.offset
		if rank[i] != top.rank {
			continue
		}
		j := next[i]
		k := next[j]
		rank[j] = noRank
		next[i] = k
		if k >= 0 {
			prev[k] = i
		}
		parts--
		for _, b := range [2]int32{i, prev[i]} {
			if b < 0 {
				continue
			}
			if rank[b] = rankOf(b); rank[b] != noRank {
				h.push(candidate{rank[b], b})
			}
		}
	}
	return parts
}

type candidate struct {
	rank   uint32
	offset int32
}

// candidates is a binary min-heap ordered by rank, then offset, so that
// among equal ranks the leftmost pair merges first.
type candidates []candidate

func (h candidates) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h candidates) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candidates) push(c candidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *candidates) pop() candidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h candidates) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
