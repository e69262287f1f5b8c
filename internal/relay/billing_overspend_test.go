package relay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// callResult is one /v1 answer collected from a goroutine.
type callResult struct {
	status  int
	code    string
	typ     string // error.type: the Anthropic shape has no code
	message string
	err     error
}

// post sends one /v1 call without touching t, for use in goroutines.
func post(url, key string, body []byte) callResult {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return callResult{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return callResult{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	var e v1Error
	if resp.StatusCode != http.StatusOK {
		json.Unmarshal(raw, &e)
	}
	return callResult{status: resp.StatusCode, code: e.Error.Code, typ: e.Error.Type, message: e.Error.Message, err: err}
}

// overspendCases are the calls the overspend tests send, one node or two.
var overspendCases = []struct {
	name      string
	b         fakeupstream.Behavior
	maxTokens int64
}{
	// The default answer: 12 + 8 tokens, no max_tokens sent.
	{"default answer", fakeupstream.Behavior{}, 0},
	// A small max_tokens and a prompt far costlier than the body shows
	// (as an image URL is): an estimate from the body and max_tokens
	// alone would let all 50 through.
	{"prompt cost hidden from the body", fakeupstream.Behavior{PromptTokens: 1000, CompletionTokens: 16}, 16},
}

// TestBillingNoOverspend sends 50 parallel calls from a user whose balance
// covers 5, with request bodies that look tiny, then calls one at a time
// until refused. Together they must cost at most the balance, leave nothing
// reserved (the rest of the balance stays spendable, and the balance fell
// by exactly what the logs charged), and never leave the balance below zero
// (strict billing, the default).
func TestBillingNoOverspend(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range overspendCases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			b.Delay = 20 * time.Millisecond // keep the parallel calls in flight together
			prompt, completion := b.PromptTokens, b.CompletionTokens
			if prompt == 0 {
				prompt, completion = fakeupstream.DefaultPromptTokens, fakeupstream.DefaultCompletionTokens
			}
			cost := tokenCost(2, 8, 0, prompt, completion, 0, 1)
			balance := 5 * cost
			e := apptest.New(t)
			up := fakeupstream.New(t)
			up.SetBehavior(b)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Quota: balance})
			req := chatBody("gpt-test", "hi", false)
			if tc.maxTokens > 0 {
				req["max_tokens"] = tc.maxTokens
			}
			body, _ := json.Marshal(req)
			url := e.Server.URL + "/v1/chat/completions"

			results := make([]callResult, 50)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() {
					<-start
					results[i] = post(url, g.Key, body)
				})
			}
			close(start)
			wg.Wait()
			ok := 0
			for i, r := range results {
				switch {
				case r.err != nil:
					t.Fatalf("parallel call %d: %v", i, r.err)
				case r.status == http.StatusOK:
					ok++
				case r.status != http.StatusTooManyRequests || r.code != "insufficient_quota":
					t.Fatalf("parallel call %d: %d %s, want 200 or 429 insufficient_quota", i, r.status, r.code)
				}
			}
			t.Logf("%d of 50 parallel calls served; balance %d after them", ok, g.Quota(g.UserID))

			// Whatever is left can still be spent, one call at a time: no
			// reservation stayed behind. Strict billing admits a call when
			// the balance covers its prompt bound (body bytes + 16 tokens)
			// and one completion token.
			need := tokenCost(2, 8, 0, int64(len(body))+16, 1, 0, 1)
			for i := 0; ; i++ {
				left := g.Quota(g.UserID)
				r := post(url, g.Key, body)
				if r.err != nil {
					t.Fatalf("sequential call %d: %v", i, r.err)
				}
				if left >= need && r.status != http.StatusOK {
					t.Fatalf("sequential call %d refused (%d %s) with %d left", i, r.status, r.code, left)
				}
				if left < need {
					if r.status != http.StatusTooManyRequests || r.code != "insufficient_quota" {
						t.Fatalf("sequential call %d with %d left: %d %s, want 429 insufficient_quota", i, left, r.status, r.code)
					}
					break
				}
				ok++
				if i > 10 {
					t.Fatalf("still spending after %d sequential calls: %d left", i, left)
				}
			}

			final := g.Quota(g.UserID)
			spent := balance - final
			logs := g.ConsumeLogs()
			if spent > balance || final < 0 {
				t.Errorf("spent %d of a balance of %d (final %d); one call costs %d", spent, balance, final, cost)
			}
			if sum := apptest.SumQuota(logs); sum != spent || len(logs) != ok || spent != int64(ok)*cost {
				t.Errorf("balance fell by %d; %d logs charged %d; %d calls served at %d each", spent, len(logs), sum, ok, cost)
			}
			if final >= need || ok < 4 {
				t.Errorf("%d calls served, %d left (a call needs %d) from a balance that covers 5", ok, final, need)
			}
		})
	}
}

// TestBillingLargeBalanceNotBlocked checks the other side of the
// reservation estimate: a balance that covers many reservations serves 50
// parallel calls, all of them, each billed exactly.
func TestBillingLargeBalanceNotBlocked(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{Delay: 20 * time.Millisecond})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL}) // 10 CNY
	body, _ := json.Marshal(chatBody("gpt-test", "hi", false))
	results := make([]callResult, 50)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = post(e.Server.URL+"/v1/chat/completions", g.Key, body) })
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("call %d: %d %s %v", i, r.status, r.code, r.err)
		}
	}
	if spent := 10_000_000 - g.Quota(g.UserID); spent != 50*88 {
		t.Errorf("spent %d, want %d", spent, 50*88)
	}
}
