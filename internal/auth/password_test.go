package auth_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/modelgate/modelgate/internal/auth"
)

// bcrypt is slow under -race, so the hashing tests run in parallel.

func TestHashPasswordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{"12345678", "密码密码密码"} {
		h, err := auth.HashPassword(pw)
		if err != nil {
			t.Fatalf("HashPassword(%q): %v", pw, err)
		}
		if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != 10 {
			t.Errorf("cost = %d, %v; want 10", cost, err)
		}
		if !auth.CheckPassword(h, pw) {
			t.Errorf("CheckPassword(hash of %q, same) = false", pw)
		}
		if auth.CheckPassword(h, pw+"x") {
			t.Errorf("CheckPassword(hash of %q, %q) = true", pw, pw+"x")
		}
	}
}

func TestHashPasswordSalted(t *testing.T) {
	t.Parallel()
	a, _ := auth.HashPassword("12345678")
	b, _ := auth.HashPassword("12345678")
	if a == b {
		t.Error("two hashes of one password are equal; want distinct salts")
	}
}

func TestHashPasswordTooLongForBcrypt(t *testing.T) {
	if _, err := auth.HashPassword(strings.Repeat("a", 73)); err == nil {
		t.Error("HashPassword(73 bytes) succeeded; want error")
	}
}

func TestCheckPasswordBadHash(t *testing.T) {
	for _, h := range []string{"", "not a hash", "$2a$10$short"} {
		if auth.CheckPassword(h, "12345678") {
			t.Errorf("CheckPassword(%q) = true", h)
		}
	}
}

func TestValidatePassword(t *testing.T) {
	tests := []struct {
		name string
		pw   string
		ok   bool
	}{
		{"empty", "", false},
		{"7 bytes", strings.Repeat("a", 7), false},
		{"8 bytes", strings.Repeat("a", 8), true},
		{"64 bytes", strings.Repeat("a", 64), true},
		{"65 bytes", strings.Repeat("a", 65), false},
		// Bytes, not runes: 22 CJK characters are 66 bytes.
		{"22 CJK characters", strings.Repeat("密", 22), false},
		{"3 CJK characters", "密码码", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := auth.ValidatePassword(tt.pw)
			if got := err == nil; got != tt.ok {
				t.Fatalf("ValidatePassword(%q) = %v; want ok=%v", tt.pw, err, tt.ok)
			}
			if err != nil && (!errors.Is(err, auth.ErrPasswordLength) || err.Error() != auth.MsgPasswordLength) {
				t.Errorf("error = %q; want %q", err, auth.MsgPasswordLength)
			}
		})
	}
}
