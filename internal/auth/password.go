// Package auth owns how /api callers prove who they are: password hashing,
// signed session cookies and login throttling.
package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"
)

// bcryptCost is fixed rather than bcrypt.DefaultCost so that a library update
// cannot silently change how long every login takes.
const bcryptCost = 10

// Password length bounds, in bytes. x/crypto's bcrypt rejects input over 72
// bytes, so the upper bound stays below it.
const (
	minPasswordLen = 8
	maxPasswordLen = 64
)

// MsgPasswordLength is the user-facing message for a password outside the
// allowed length.
const MsgPasswordLength = "密码长度必须在 8 到 64 个字符之间"

// ErrPasswordLength is returned by ValidatePassword; its message is
// MsgPasswordLength so handlers can show it as is.
var ErrPasswordLength = errors.New(MsgPasswordLength)

// ValidatePassword reports whether pw is acceptable as a new password. The
// bounds count bytes, not characters, because bcrypt's limit is in bytes.
func ValidatePassword(pw string) error {
	if len(pw) < minPasswordLen || len(pw) > maxPasswordLen {
		return ErrPasswordLength
	}
	return nil
}

// HashPassword returns the bcrypt hash of pw for storage. Callers validate
// new passwords with ValidatePassword first; HashPassword only fails for
// input bcrypt cannot take (over 72 bytes).
func HashPassword(pw string) (string, error) {
	return HashPasswordCost(pw, bcryptCost)
}

// HashPasswordCost is HashPassword with an explicit bcrypt cost; 0 means the
// default. Only tests lower it, to keep suites that create many users fast.
func HashPasswordCost(pw string, cost int) (string, error) {
	if cost == 0 {
		cost = bcryptCost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether pw matches hash. The comparison is constant
// time; a malformed or empty hash never matches.
func CheckPassword(hash, pw string) bool {
	passwordChecks.Add(1)
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// passwordChecks counts CheckPassword calls, for tests that assert how many
// guesses a login path evaluated (PasswordChecks).
var passwordChecks atomic.Int64

// PasswordChecks is the number of CheckPassword calls so far in this process.
func PasswordChecks() int64 { return passwordChecks.Load() }

var dummyHashes sync.Map // cost → hash

// DummyHash is a hash, at cost (0: the default), of a random password no one
// knows. A login for an unknown username is checked against it, so it takes
// as long as one for a known username and timing does not tell which exist.
func DummyHash(cost int) string {
	if h, ok := dummyHashes.Load(cost); ok {
		return h.(string)
	}
	h, err := HashPasswordCost(rand.Text(), cost)
	if err != nil {
		panic(err) // a 26-byte password at a valid cost always hashes
	}
	actual, _ := dummyHashes.LoadOrStore(cost, h)
	return actual.(string)
}
