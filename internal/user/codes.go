package user

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"
)

// The rules of mailed codes (issue 31): a 6-digit verification code for
// registration and email binding, and a reset token for a forgotten
// password. Both work once; an address gets at most one new code a minute.
const (
	PurposeVerify = "verify"
	PurposeReset  = "reset"

	VerificationTTL = 10 * time.Minute
	ResetTTL        = 15 * time.Minute
	ResendAfter     = time.Minute
)

// NewVerificationCode is six random decimal digits.
func NewVerificationCode() string {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	s := n.String()
	return strings.Repeat("0", 6-len(s)) + s
}

// NewResetToken is a random token of 26 base32 characters (130 bits).
func NewResetToken() string { return rand.Text() }

// HashCode is what the database keeps of a code: its SHA-256, so a read of
// the table does not give working codes away.
func HashCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// NormalizeEmail is the form addresses are compared and stored in for
// codes: trimmed and lower case. Invalid UTF-8 is left as it is, for
// ValidateEmail to refuse (lowering it would turn bad bytes into U+FFFD,
// another address that validates).
func NormalizeEmail(email string) string {
	email = strings.TrimSpace(email)
	if !utf8.ValidString(email) {
		return email
	}
	return strings.ToLower(email)
}

// NewPassword is the random password a reset gives: 12 characters.
func NewPassword() string { return rand.Text()[:12] }
