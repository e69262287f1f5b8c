package billing

import (
	"math"
	"testing"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// What a call holds on a plan, and the completion limit a hold buys
// (docs/decisions/plan-limits.md, "Token holds").
func TestPlanHold(t *testing.T) {
	for _, tc := range []struct {
		name        string
		call        Call
		most, least int64
	}{
		{"bounded: prompt + max_tokens, no default floor",
			Call{Kind: KindChat, PromptBound: 10, MaxTokens: 500, DefaultMaxTokens: 16384}, 510, 0},
		{"bounded, n choices", Call{Kind: KindChat, PromptBound: 10, MaxTokens: 500, Choices: 3, DefaultMaxTokens: 16384}, 1510, 0},
		{"open: the default completion, at least one token",
			Call{Kind: KindChat, PromptBound: 10, DefaultMaxTokens: 16384}, 16394, 11},
		{"open, n choices", Call{Kind: KindChat, PromptBound: 10, Choices: 2, DefaultMaxTokens: 100}, 210, 12},
		{"open on the Responses API: at least 16", Call{Kind: KindResponses, PromptBound: 10, DefaultMaxTokens: 100}, 110, 26},
		{"open with the model's own output limit", Call{Kind: KindChat, PromptBound: 10, DefaultMaxTokens: 16384, OutputLimit: 4096}, 4106, 11},
		{"embeddings: the prompt", Call{Kind: KindEmbeddings, PromptBound: 10, DefaultMaxTokens: 16384}, 10, 0},
		{"an upload: the balance's estimate", Call{Kind: KindChat, Multipart: true, PromptBound: 10, DefaultMaxTokens: 100}, 110, 0},
		{"huge max_tokens saturates", Call{Kind: KindChat, PromptBound: 10, MaxTokens: math.MaxInt64, Choices: 128}, planlimit.MaxAmount, 0},
		{"huge prompt", Call{Kind: KindChat, PromptBound: math.MaxInt64, DefaultMaxTokens: 100}, planlimit.MaxAmount, planlimit.MaxAmount},
	} {
		most, least := planHold(&tc.call)
		if most != tc.most || least != tc.least {
			t.Errorf("%s: hold %d, least %d; want %d, %d", tc.name, most, least, tc.most, tc.least)
		}
		if least > most || planlimit.ValidAmount(most) != nil {
			t.Errorf("%s: hold %d, least %d out of range", tc.name, most, least)
		}
	}
	c := &Call{Kind: KindChat, PromptBound: 10, Choices: 2}
	if n := PlanCompletionLimit(c, 210); n != 100 {
		t.Errorf("a hold of 210 for 2 choices after a prompt of 10 buys %d each, want 100", n)
	}
	if n := PlanCompletionLimit(&Call{Kind: KindResponses, PromptBound: 10}, 10); n != MinResponsesOutput {
		t.Errorf("Responses API floor: %d", n)
	}
}
