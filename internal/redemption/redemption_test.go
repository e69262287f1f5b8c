package redemption

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		{"", MsgNameLength},
		{"a", ""},
		{strings.Repeat("x", 20), ""},
		{strings.Repeat("x", 21), MsgNameLength},
		{strings.Repeat("码", 20), ""}, // characters, not bytes
		{strings.Repeat("码", 21), MsgNameLength},
		{"a\x00", "兑换码名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
	}
	for _, tt := range tests {
		if got := ValidateName(tt.name); got != tt.want {
			t.Errorf("ValidateName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestValidateQuotaAndCount(t *testing.T) {
	quotas := []struct {
		quota int64
		want  string
	}{{-1, MsgQuotaPositive}, {0, MsgQuotaPositive}, {1, ""}, {1 << 40, ""}}
	for _, tt := range quotas {
		if got := ValidateQuota(tt.quota); got != tt.want {
			t.Errorf("ValidateQuota(%d) = %q, want %q", tt.quota, got, tt.want)
		}
	}
	counts := []struct {
		count int
		want  string
	}{{-1, MsgCountRange}, {0, MsgCountRange}, {1, ""}, {100, ""}, {101, MsgCountRange}}
	for _, tt := range counts {
		if got := ValidateCount(tt.count); got != tt.want {
			t.Errorf("ValidateCount(%d) = %q, want %q", tt.count, got, tt.want)
		}
	}
}

func TestValidateSettableStatus(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{{0, MsgStatusInvalid}, {StatusUnused, ""}, {StatusDisabled, ""}, {StatusUsed, MsgStatusInvalid}, {4, MsgStatusInvalid}}
	for _, tt := range tests {
		if got := ValidateSettableStatus(tt.status); got != tt.want {
			t.Errorf("ValidateSettableStatus(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

func TestNewKey(t *testing.T) {
	seen := make(map[string]bool)
	counts := make(map[rune]int)
	for range 2000 {
		k := NewKey()
		if len(k) != KeyLength {
			t.Fatalf("key %q has %d characters, want %d", k, len(k), KeyLength)
		}
		if seen[k] {
			t.Fatalf("key %q generated twice", k)
		}
		seen[k] = true
		for _, c := range k {
			if !strings.ContainsRune(keyAlphabet, c) {
				t.Fatalf("key %q has %q outside the alphabet", k, c)
			}
			counts[c]++
		}
	}
	// 64,000 characters over 36 symbols: about 1,778 each. A biased or
	// truncated alphabet would leave some far off.
	for _, c := range keyAlphabet {
		if n := counts[c]; n < 1400 || n > 2200 {
			t.Errorf("symbol %q drawn %d times, want about 1778", c, n)
		}
	}
}

func TestNormalizeKey(t *testing.T) {
	if got := NormalizeKey("  ABC123\n"); got != "ABC123" {
		t.Fatalf("NormalizeKey = %q", got)
	}
}
