package importer

import (
	"math"
	"math/big"
	"testing"

	"github.com/modelgate/modelgate/internal/pricing"
)

func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, err := ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestQuotaConversion(t *testing.T) {
	qpu := big.NewRat(DefaultQuotaPerUnit, 1)
	cases := []struct {
		name, rate string
		qpu        *big.Rat
		q          int64
		want       int64
		clamped    bool
	}{
		{"one USD at 7.2", "7.2", qpu, 500000, 7_200_000, false},
		{"zero", "7.2", qpu, 0, 0, false},
		{"one source unit at 7.2 is 14.4", "7.2", qpu, 1, 14, false},
		{"halves round away from zero", "7.25", qpu, 2, 29, false}, // 2×14.5 = 29 exactly
		{"1.45 rounds down", "0.725", qpu, 1, 1, false},            // 1.45
		{"2.5 rounds up", "1.25", qpu, 1, 3, false},                // 2.5
		{"-2.5 rounds to -3", "1.25", qpu, -1, -3, false},
		{"odd rate exact", "7.1234", qpu, 123456789, 1_758_864_182, false}, // 123456789×14.2468 = 1758864181.5252
		{"beyond 2^53 exact", "7", qpu, 1 << 55, 504_403_158_265_495_552, false},
		{"MaxInt64 clamps", "7.2", qpu, math.MaxInt64, pricing.MaxBalance, true},
		{"MinInt64 clamps", "7.2", qpu, math.MinInt64, -pricing.MaxBalance, true},
		{"custom QuotaPerUnit", "7", big.NewRat(1_000_000, 1), 1_000_000, 7_000_000, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hi := pricing.MaxBalance
			if c.name == "beyond 2^53 exact" {
				hi = math.MaxInt64
			}
			got, clamped := NewConverter(rat(t, c.rate), c.qpu).Quota(c.q, -pricing.MaxBalance, hi)
			if got != c.want || clamped != c.clamped {
				t.Fatalf("Quota(%d) at %s = %d, %v; want %d, %v", c.q, c.rate, got, clamped, c.want, c.clamped)
			}
		})
	}
}

func TestParseRateRefuses(t *testing.T) {
	for _, s := range []string{"", "0", "-7", "abc", "1e3", "7/1", "NaN", "Inf", "2000000"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}

func TestPricesFromRatios(t *testing.T) {
	c := NewConverter(rat(t, "7.2"), big.NewRat(DefaultQuotaPerUnit, 1))
	if got := c.PerMillionCNY(1); math.Abs(got-14.4) > 1e-9 { // 2 USD per 1M tokens
		t.Fatalf("ratio 1 = %v CNY per 1M, want 14.4", got)
	}
	if got := c.USDToCNY(0.04); math.Abs(got-0.288) > 1e-12 {
		t.Fatalf("0.04 USD = %v CNY", got)
	}
}

func TestMapChannelType(t *testing.T) {
	cases := []struct {
		system   string
		src      int
		want     int
		base     string
		disabled bool
	}{
		{OneAPI, 1, 1, "", false},
		{OneAPI, 14, 14, "", false},
		{OneAPI, 24, 24, "", false},
		{OneAPI, 36, 1, "https://api.deepseek.com", false},
		{OneAPI, 25, 1, "https://api.moonshot.cn", false},
		{OneAPI, 17, 1, "https://dashscope.aliyuncs.com/compatible-mode", false},
		{OneAPI, 30, 1, "http://localhost:11434", false},
		{OneAPI, 16, 1, "", true},   // Zhipu v4: not under /v1
		{OneAPI, 41, 1, "", true},   // one-api's 41 is Novita (/v3/openai)
		{OneAPI, 42, 41, "", false}, // one-api's Vertex AI is 42
		{NewAPI, 41, 41, "", false}, // new-api's Vertex AI is 41
		{NewAPI, 43, 1, "https://api.deepseek.com", false},
		{NewAPI, 3, 3, "", false},
		{NewAPI, 33, 33, "", false},
		{NewAPI, 2, 1, "", true}, // Midjourney
	}
	for _, c := range cases {
		got := mapChannelType(c.system, c.src)
		if got.Type != c.want || got.BaseURL != c.base || (got.Reason != "") != c.disabled {
			t.Errorf("%s type %d → %+v; want type %d base %q disabled %v", c.system, c.src, got, c.want, c.base, c.disabled)
		}
	}
}

func TestPlainModel(t *testing.T) {
	for k, want := range map[string]string{"gpt-4": "gpt-4", "llama3-8b-8192(33)": "llama3-8b-8192", "a(b)": "a(b)"} {
		if got, _ := plainModel(k); got != want {
			t.Errorf("plainModel(%q) = %q, want %q", k, got, want)
		}
	}
}
