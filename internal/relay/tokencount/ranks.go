package tokencount

import (
	"errors"
	"hash/maphash"
	"math/bits"
)

// rankTable maps a token to its rank, like a map[string]uint32, but holds
// no pointer per token. A loaded o200k vocabulary is 200,000 tokens: as
// map keys they were 200,000 string headers that the garbage collector
// followed on every cycle, all into one string it had already marked,
// and under load that was most of the gateway's marking work
// (docs/performance.md, issue 32, fifth round). Here the tokens' bytes are
// one string and the table is an array of integers, which the collector
// never scans.
//
// Open addressing with linear probing, at most half full; a slot packs a
// token's offset in tokens (high 32 bits), its length (8 bits: the
// vocabulary's lengths are one byte) and its rank (low 24 bits). A token
// is never empty, so the zero slot is free.
type rankTable struct {
	tokens string
	slots  []uint64
	mask   uint64
	seed   maphash.Seed
	n      int // tokens added
}

const (
	maxRankTokens = 1 << 24 // ranks fit 24 bits
	rankBits      = 24
	lengthBits    = 8
)

// newRankTable sizes a table for n tokens whose bytes are tokens.
func newRankTable(tokens string, n int) (*rankTable, error) {
	if n > maxRankTokens || uint64(len(tokens)) >= 1<<32 {
		return nil, errors.New("vocabulary: too large")
	}
	size := uint64(1) << bits.Len64(uint64(2*n)) // > 2n: at most half full
	return &rankTable{tokens: tokens, slots: make([]uint64, size), mask: size - 1, seed: maphash.MakeSeed()}, nil
}

// add records the token at tokens[off:off+length] with rank. It refuses an
// empty token and one already there.
func (t *rankTable) add(off, length int, rank uint32) error {
	if length == 0 {
		return errors.New("vocabulary: empty token")
	}
	tok := t.tokens[off : off+length]
	i := maphash.String(t.seed, tok) & t.mask
	for t.slots[i] != 0 {
		if t.at(t.slots[i]) == tok {
			return errors.New("vocabulary: repeated token")
		}
		i = (i + 1) & t.mask
	}
	t.slots[i] = uint64(off)<<32 | uint64(length)<<rankBits | uint64(rank)
	t.n++
	return nil
}

// rank returns the rank of tok, and whether it is a token.
func (t *rankTable) rank(tok string) (uint32, bool) {
	if tok == "" || len(tok) >= 1<<lengthBits {
		return 0, false
	}
	i := maphash.String(t.seed, tok) & t.mask
	for {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if int(s>>rankBits&(1<<lengthBits-1)) == len(tok) && t.at(s) == tok {
			return uint32(s & (1<<rankBits - 1)), true
		}
		i = (i + 1) & t.mask
	}
}

// at is the token a used slot holds.
func (t *rankTable) at(s uint64) string {
	off := s >> 32
	return t.tokens[off : off+s>>rankBits&(1<<lengthBits-1)]
}
