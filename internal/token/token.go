// Package token holds the rules of API keys (sk-…): how a key is generated,
// hashed, shown masked and parsed from an Authorization header, and what a
// valid name, model allow list, subnet list, expiry and status change are.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Statuses (spec: API token). Expired and Exhausted are set by the relay,
// or derived on read (EffectiveStatus); a user only sets Enabled or Disabled.
const (
	StatusEnabled   = 1
	StatusDisabled  = 2
	StatusExpired   = 3
	StatusExhausted = 4
)

// NeverExpires is the expired_time of a key without expiry.
const NeverExpires = -1

// KeyPrefix starts every key; SecretLength is the random part after it.
const (
	KeyPrefix    = "sk-"
	SecretLength = 48
)

// alphabet has no '-': the spec's channel pinning appends "-<channel_id>"
// to the key and splits on the first '-'.
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// GenerateKey returns a new key: "sk-" and 48 random alphanumeric
// characters (about 285 bits).
func GenerateKey() string {
	secret := make([]byte, 0, SecretLength)
	var buf [64]byte
	for len(secret) < SecretLength {
		rand.Read(buf[:])
		for _, b := range buf {
			// 248 = 4×62: dropping bytes above it keeps every character
			// equally likely.
			if b < 248 && len(secret) < SecretLength {
				secret = append(secret, alphabet[b%62])
			}
		}
	}
	return KeyPrefix + string(secret)
}

// HashKey is the stored form of a key: the SHA-256 hex of its secret part.
// A leading "sk-" is ignored, so the full key and the secret that
// ParseAuthKey returns hash alike.
func HashKey(key string) string {
	h := HashKeyHex(key)
	return string(h[:])
}

// HashKeyHex is HashKey as an array, which costs no allocation for a
// secret of up to 128 bytes (the relay's key cache is looked up with it on
// every call).
func HashKeyHex(key string) (h [2 * sha256.Size]byte) {
	secret := strings.TrimPrefix(key, KeyPrefix)
	var sum [sha256.Size]byte
	var b [128]byte
	if len(secret) <= len(b) {
		sum = sha256.Sum256(append(b[:0], secret...))
	} else {
		sum = sha256.Sum256([]byte(secret))
	}
	hex.Encode(h[:], sum[:])
	return h
}

// maskShown is how many characters of the secret stay visible at each end.
const maskShown = 4

// Ends returns the start and end of a key's secret that a masked key shows.
func Ends(key string) (prefix, suffix string) {
	secret := strings.TrimPrefix(key, KeyPrefix)
	if len(secret) < 2*maskShown {
		return "", ""
	}
	return secret[:maskShown], secret[len(secret)-maskShown:]
}

// Mask is the form of a key that lists show: sk-abcd**********wxyz.
func Mask(prefix, suffix string) string {
	return KeyPrefix + prefix + "**********" + suffix
}

// Errors of ParseAuthKey. The relay answers all of them with 401.
var (
	ErrNoKey        = errors.New("no api key")
	ErrMalformedKey = errors.New("malformed api key")
	ErrBadChannel   = errors.New("channel id after the api key is not a positive integer")
)

// ParseAuthKey reads an API key from an Authorization header (spec:
// Authentication, scheme 3): it strips "Bearer " and "sk-", takes the part
// before the first '-' as the key's secret and, when a part follows, parses
// it as the pinned channel id. The secret is checked against the generated
// format, so a malformed key never reaches the database.
func ParseAuthKey(header string) (key string, channelID int64, hasChannel bool, err error) {
	s := strings.TrimSpace(header)
	if scheme, rest, _ := strings.Cut(s, " "); strings.EqualFold(scheme, "Bearer") {
		s = strings.TrimSpace(rest)
	}
	s = strings.TrimPrefix(s, KeyPrefix)
	if s == "" {
		return "", 0, false, ErrNoKey
	}
	key, channel, hasChannel := strings.Cut(s, "-")
	if !ValidSecret(key) {
		return "", 0, false, ErrMalformedKey
	}
	if !hasChannel {
		return key, 0, false, nil
	}
	if !allDigits(channel) {
		return "", 0, false, ErrBadChannel
	}
	channelID, err = strconv.ParseInt(channel, 10, 64)
	if err != nil || channelID <= 0 {
		return "", 0, false, ErrBadChannel
	}
	return key, channelID, true, nil
}

// LegacySecretLength is the length of keys one-api made before v0.6 (a
// UUID without dashes, 32 hex characters): deployments imported from it
// (docs/import.md) still hold such keys, and their clients send them.
const LegacySecretLength = 32

// ValidSecret reports whether s has the shape of a generated key's secret,
// or of an imported one-api key.
func ValidSecret(s string) bool {
	if len(s) != SecretLength && len(s) != LegacySecretLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(alphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

// allDigits rejects what strconv would accept but an id never looks like:
// signs, spaces and the empty string.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
