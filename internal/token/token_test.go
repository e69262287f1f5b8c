package token_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/token"
)

func TestGenerateKeyFormat(t *testing.T) {
	seen := map[string]bool{}
	used := map[rune]bool{}
	for range 1000 {
		k := token.GenerateKey()
		if len(k) != 51 || !strings.HasPrefix(k, "sk-") {
			t.Fatalf("key %q: want sk- and 48 characters", k)
		}
		secret := k[3:]
		if strings.Contains(secret, "-") {
			t.Fatalf("key %q has a '-' after the prefix", k)
		}
		for _, r := range secret {
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				t.Fatalf("key %q has %q, not alphanumeric", k, r)
			}
			used[r] = true
		}
		if seen[k] {
			t.Fatalf("key %q generated twice", k)
		}
		seen[k] = true
		got, _, _, err := token.ParseAuthKey("Bearer " + k)
		if err != nil || got != secret {
			t.Fatalf("ParseAuthKey(%q) = %q, %v", k, got, err)
		}
	}
	// 48,000 draws from 62 characters: every one must turn up.
	if len(used) != 62 {
		t.Fatalf("generated keys use %d distinct characters, want 62", len(used))
	}
}

func TestHashKey(t *testing.T) {
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" // SHA-256("abc")
	k := token.GenerateKey()
	tests := []struct {
		name, a, b string
		same       bool
	}{
		{"known vector", token.HashKey("abc"), abc, true},
		{"sk- prefix is ignored", token.HashKey("sk-abc"), abc, true},
		{"full key and secret agree", token.HashKey(k), token.HashKey(k[3:]), true},
		{"different keys differ", token.HashKey(k), token.HashKey(token.GenerateKey()), false},
		{"case matters", token.HashKey("abc"), token.HashKey("ABC"), false},
	}
	for _, tt := range tests {
		if (tt.a == tt.b) != tt.same {
			t.Errorf("%s: %s vs %s", tt.name, tt.a, tt.b)
		}
		if len(tt.a) != 64 {
			t.Errorf("%s: hash %q is not 64 hex characters", tt.name, tt.a)
		}
	}
}

func TestMask(t *testing.T) {
	k := "sk-abcd" + strings.Repeat("0", 40) + "wxyz"
	p, s := token.Ends(k)
	if got, want := token.Mask(p, s), "sk-abcd**********wxyz"; got != want {
		t.Fatalf("Mask = %q, want %q", got, want)
	}
}

func TestParseAuthKey(t *testing.T) {
	secret := strings.Repeat("aB3", 16)
	tests := []struct {
		header     string
		key        string
		channel    int64
		hasChannel bool
		err        error
	}{
		{"Bearer sk-" + secret, secret, 0, false, nil},
		{"bearer sk-" + secret, secret, 0, false, nil},
		{"  Bearer   sk-" + secret + "  ", secret, 0, false, nil},
		{"sk-" + secret, secret, 0, false, nil},
		{secret, secret, 0, false, nil},
		{"Bearer sk-" + secret + "-7", secret, 7, true, nil},
		{"Bearer sk-" + secret + "-9223372036854775807", secret, 9223372036854775807, true, nil},
		{"Bearer sk-" + secret + "-0", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "-", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "--7", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "-+7", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "-7x", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "-7-8", "", 0, false, token.ErrBadChannel},
		{"Bearer sk-" + secret + "-9223372036854775808", "", 0, false, token.ErrBadChannel},
		{"", "", 0, false, token.ErrNoKey},
		{"Bearer ", "", 0, false, token.ErrNoKey},
		{"Bearer", "", 0, false, token.ErrNoKey},
		{"Bearer sk-", "", 0, false, token.ErrNoKey},
		{"Bearer sk-short", "", 0, false, token.ErrMalformedKey},
		{"Bearer sk-" + secret[:32], secret[:32], 0, false, nil}, // an imported one-api key of before v0.6
		{"Bearer sk-" + secret[:32] + "-7", secret[:32], 7, true, nil},
		{"Bearer sk-" + secret[:31], "", 0, false, token.ErrMalformedKey},
		{"Bearer sk-" + secret[:33], "", 0, false, token.ErrMalformedKey},
		{"Bearer sk-" + secret + "x", "", 0, false, token.ErrMalformedKey},
		{"Bearer sk-" + secret[:47] + "_", "", 0, false, token.ErrMalformedKey},
		{"Bearer sk--7", "", 0, false, token.ErrMalformedKey},
		{"Basic " + secret, "", 0, false, token.ErrMalformedKey},
	}
	for _, tt := range tests {
		key, ch, has, err := token.ParseAuthKey(tt.header)
		if key != tt.key || ch != tt.channel || has != tt.hasChannel || !errors.Is(err, tt.err) {
			t.Errorf("ParseAuthKey(%q) = %q, %d, %v, %v; want %q, %d, %v, %v",
				tt.header, key, ch, has, err, tt.key, tt.channel, tt.hasChannel, tt.err)
		}
	}
}

// HashKeyHex is HashKey's bytes, for secrets on either side of its stack
// buffer, and costs no allocation for a generated key.
func TestHashKeyHex(t *testing.T) {
	for _, k := range []string{"", "abc", "sk-abc", token.GenerateKey(), strings.Repeat("x", 128), strings.Repeat("y", 129), "sk-" + strings.Repeat("z", 300)} {
		if h := token.HashKeyHex(k); string(h[:]) != token.HashKey(k) {
			t.Errorf("HashKeyHex(%.20q) = %s, HashKey %s", k, h[:], token.HashKey(k))
		}
	}
	k := token.GenerateKey()
	if n := testing.AllocsPerRun(100, func() { _ = token.HashKeyHex(k) }); n != 0 {
		t.Errorf("HashKeyHex allocates %v times, want 0", n)
	}
}
