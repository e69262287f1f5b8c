// Package redemption holds the rules of redemption codes: their statuses,
// what a valid name, quota and batch size look like, the status changes an
// admin may make, and how a key is generated.
package redemption

import (
	"crypto/rand"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Statuses. A code is created unused; an admin may disable and re-enable it;
// redeeming it makes it used, which is final.
const (
	StatusUnused   = 1
	StatusDisabled = 2
	StatusUsed     = 3
)

// Limits of a create request (spec: Limits, redemption batch count).
const (
	MaxNameLength = 20
	MinCount      = 1
	MaxCount      = 100
	DefaultCount  = 1
)

// KeyLength is the number of characters of a generated key.
const KeyLength = 32

// keyAlphabet is what keys are made of: upper-case letters and digits, easy
// to read out and to type. 36 symbols × 32 characters ≈ 165 random bits.
const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Validation messages.
const (
	MsgNameLength    = "兑换码名称长度必须在 1 到 20 个字符之间"
	MsgQuotaPositive = "兑换码额度必须大于 0"
	MsgQuotaTooLarge = "兑换码额度不能超过 1000000000000000"
	MsgCountRange    = "兑换码数量必须在 1 到 100 之间"
	MsgStatusInvalid = "兑换码状态只能设置为 1(启用)或 2(禁用)"
)

// Text rules of the stored fields (columns: store.Redemption).
var (
	nameText = textfield.Field{Label: "兑换码名称", MaxChars: 64}
	keyText  = textfield.Field{Label: "兑换码", MaxChars: 64}
)

// ValidateName checks that name (already trimmed) has 1 to 20 characters
// of text.
func ValidateName(name string) string {
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameLength {
		return MsgNameLength
	}
	return nameText.Validate(name)
}

// ValidateQuota checks that a code credits something, and at most
// pricing.MaxBalance.
func ValidateQuota(quota int64) string {
	switch {
	case quota <= 0:
		return MsgQuotaPositive
	case quota > pricing.MaxBalance:
		return MsgQuotaTooLarge
	}
	return ""
}

// ValidateCount checks the batch size of a create request.
func ValidateCount(count int) string {
	if count < MinCount || count > MaxCount {
		return MsgCountRange
	}
	return ""
}

// ValidateSettableStatus checks a status an admin sets directly: only
// enabled (unused) or disabled. Used is reached only by redeeming.
func ValidateSettableStatus(status int) string {
	if status != StatusUnused && status != StatusDisabled {
		return MsgStatusInvalid
	}
	return ""
}

// NormalizeKey trims the whitespace users paste around a key. Case is kept:
// keys match exactly.
func NormalizeKey(key string) string { return strings.TrimSpace(key) }

// PlausibleKey reports whether key is text the code column could hold, so
// looking it up is worth a query: one that is not cannot exist.
func PlausibleKey(key string) bool { return keyText.Validate(key) == "" }

// NewKey returns a fresh random key of KeyLength characters from
// crypto/rand. Bytes at or above the largest multiple of the alphabet size
// are redrawn, so every character is uniformly distributed.
func NewKey() string {
	const limit = 256 - 256%len(keyAlphabet)
	var b strings.Builder
	b.Grow(KeyLength)
	buf := make([]byte, KeyLength*2)
	for b.Len() < KeyLength {
		rand.Read(buf) // never fails (crypto/rand, Go ≥ 1.24)
		for _, c := range buf {
			if int(c) >= limit {
				continue
			}
			b.WriteByte(keyAlphabet[int(c)%len(keyAlphabet)])
			if b.Len() == KeyLength {
				break
			}
		}
	}
	return b.String()
}
