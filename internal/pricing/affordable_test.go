package pricing

import "testing"

func TestCompletionAffordable(t *testing.T) {
	tok := Price{InputPrice: 2, OutputPrice: 8, BillingType: BillingToken}
	tests := []struct {
		name     string
		p        Price
		prompt   int64
		amount   int64
		discount float64
		want     int64
	}{
		{"exact fit", tok, 100, 200 + 8*50, 1, 50},
		{"one quota short of the next token", tok, 100, 200 + 8*50 + 7, 1, 50},
		{"prompt only", tok, 100, 200, 1, 0},
		{"prompt not covered", tok, 100, 199, 1, 0},
		{"nothing", tok, 0, 0, 1, 0},
		{"discount", tok, 100, 100 + 4*50, 0.5, 50},
		{"rounding half up counts", Price{InputPrice: 0.3, OutputPrice: 0.3}, 0, 1, 1, 4}, // 4×0.3 = 1.2 → 1; 5×0.3 = 1.5 → 2
		{"free output", Price{InputPrice: 2}, 100, 200, 1, Unbounded},
		{"per request covered", Price{PerRequestPrice: 0.01, BillingType: BillingPerRequest}, 100, 10_000, 1, Unbounded},
		{"per request not covered", Price{PerRequestPrice: 0.01, BillingType: BillingPerRequest}, 100, 9_999, 1, 0},
		// A near-free output saturates at 2^53 (plus the correction steps).
		{"tiny output price", Price{OutputPrice: 1e-12}, 0, 1 << 40, 1, 1<<53 + 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CompletionAffordable(tc.p, tc.prompt, tc.amount, tc.discount)
			if got != tc.want {
				t.Fatalf("CompletionAffordable = %d, want %d", got, tc.want)
			}
			if got == Unbounded || got == 0 {
				return
			}
			// The answer is the largest that fits.
			if c := Quota(tc.p, Usage{PromptTokens: tc.prompt, CompletionTokens: got}, tc.discount); c > tc.amount {
				t.Errorf("%d tokens cost %d > %d", got, c, tc.amount)
			}
			if got < 1<<53 {
				if c := Quota(tc.p, Usage{PromptTokens: tc.prompt, CompletionTokens: got + 1}, tc.discount); c <= tc.amount {
					t.Errorf("%d tokens cost %d <= %d: not the largest", got+1, c, tc.amount)
				}
			}
		})
	}
}
