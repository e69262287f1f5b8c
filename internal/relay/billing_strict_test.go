package relay_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/relay"
)

// Strict billing (the default): whatever the upstream returns, no balance
// and no limited key ends below zero, and calls the money covers are served.
// The fake upstream returns 20,000 completion tokens unless the request
// limits the completion, as a real model that writes at length does.

const (
	hugeCompletion = 20_000
	strictParallel = 40
)

// strictCase is one endpoint kind through one dialect pair.
type strictCase struct {
	name string
	typ  int // channel type
	path string
	body map[string]any
	// limit reads the completion limit the upstream received (0: none).
	limit func(t *testing.T, sent []byte) int64
}

func field(t *testing.T, sent []byte, path ...string) int64 {
	t.Helper()
	var v any
	if err := json.Unmarshal(sent, &v); err != nil {
		t.Fatalf("upstream body %s: %v", sent, err)
	}
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	n, _ := v.(float64)
	return int64(n)
}

func limitAt(path ...string) func(*testing.T, []byte) int64 {
	return func(t *testing.T, sent []byte) int64 { return field(t, sent, path...) }
}

func messagesBody(content string, stream bool) map[string]any {
	return map[string]any{"model": "gpt-test", "stream": stream,
		"messages": []map[string]any{{"role": "user", "content": content}}}
}

// openCases leave the completion length open.
var openCases = []strictCase{
	{"chat passthrough", 1, "/v1/chat/completions", chatBody("gpt-test", "hi", false), limitAt("max_tokens")},
	{"chat passthrough stream", 1, "/v1/chat/completions", chatBody("gpt-test", "hi", true), limitAt("max_tokens")},
	{"completions", 1, "/v1/completions", map[string]any{"model": "gpt-test", "prompt": "hi"}, limitAt("max_tokens")},
	{"responses", 1, "/v1/responses", map[string]any{"model": "gpt-test", "input": "hi"}, limitAt("max_output_tokens")},
	{"anthropic passthrough", channel.TypeAnthropic, "/v1/messages", messagesBody("hi", false), limitAt("max_tokens")},
	{"anthropic passthrough stream", channel.TypeAnthropic, "/v1/messages", messagesBody("hi", true), limitAt("max_tokens")},
	{"openai to anthropic", channel.TypeAnthropic, "/v1/chat/completions", chatBody("gpt-test", "hi", false), limitAt("max_tokens")},
	{"openai to anthropic stream", channel.TypeAnthropic, "/v1/chat/completions", chatBody("gpt-test", "hi", true), limitAt("max_tokens")},
	{"openai to gemini", channel.TypeGemini, "/v1/chat/completions", chatBody("gpt-test", "hi", false), limitAt("generationConfig", "maxOutputTokens")},
	{"openai to gemini stream", channel.TypeGemini, "/v1/chat/completions", chatBody("gpt-test", "hi", true), limitAt("generationConfig", "maxOutputTokens")},
}

// strictAccount is who pays: the user's balance, or a limited key of a
// user with plenty.
type strictAccount struct {
	name  string
	key   bool
	money int64
}

// strictRun sets up a gateway where account holds money, sends n calls of
// body in parallel and returns the statuses, after every settlement.
type strictRun struct {
	e       *apptest.Env
	g       *apptest.Gateway
	up      *fakeupstream.Server
	key     string
	keyID   int64
	results []callResult
}

func newStrictRun(t *testing.T, typ int, acct strictAccount, b fakeupstream.Behavior) *strictRun {
	t.Helper()
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(b)
	cfg := apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: typ}
	if !acct.key {
		cfg.Quota = acct.money
	}
	g := e.NewGateway(cfg)
	s := &strictRun{e: e, g: g, up: up, key: g.Key}
	if acct.key {
		tok := g.User.CreateToken(map[string]any{"name": "limited", "remain_quota": acct.money, "unlimited_quota": false})
		s.key, s.keyID = tok.Key, tok.ID
	}
	return s
}

func (s *strictRun) parallel(t *testing.T, path string, body map[string]any, n int) (ok int) {
	t.Helper()
	raw, _ := json.Marshal(body)
	s.results = make([]callResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range s.results {
		wg.Go(func() {
			<-start
			s.results[i] = post(s.e.Server.URL+path, s.key, raw)
		})
	}
	close(start)
	wg.Wait()
	for i, r := range s.results {
		switch {
		case r.err != nil:
			t.Fatalf("call %d: %v", i, r.err)
		case r.status == http.StatusOK:
			ok++
		case r.status == http.StatusTooManyRequests && (r.code == "insufficient_quota" || r.typ == "billing_error") &&
			(r.message == relay.MsgUserQuota || r.message == relay.MsgTokenQuota || r.message == relay.MsgKeyExhausted):
		default:
			t.Fatalf("call %d: %d %s, want 200 or a refusal for quota", i, r.status, r.code)
		}
	}
	return ok
}

// checkNotNegative checks the balance and the key, and that the balance
// fell by exactly what the consume logs charged.
func (s *strictRun) checkNotNegative(t *testing.T, acct strictAccount) (spent int64) {
	t.Helper()
	before := acct.money
	if acct.key {
		before = 10_000_000
	}
	left := s.g.Quota(s.g.UserID)
	spent = before - left
	if sum := apptest.SumQuota(s.g.ConsumeLogs()); sum != spent {
		t.Errorf("balance fell by %d, logs charged %d", spent, sum)
	}
	if left < 0 {
		t.Errorf("user balance %d below zero (spent %d of %d)", left, spent, before)
	}
	if acct.key {
		var tok apptest.TokenInfo
		s.g.User.OK("GET", apptest.Path("/api/token/%d", s.keyID), nil).Decode(t, &tok)
		if tok.RemainQuota < 0 || tok.UsedQuota != spent {
			t.Errorf("key remain %d used %d (limit %d), user spent %d", tok.RemainQuota, tok.UsedQuota, acct.money, spent)
		}
	}
	return spent
}

// TestStrictBillingOpenCompletion: with no completion limit in the request
// the relay sends one the hold pays for, so 40 parallel calls on a balance
// (or a limited key) worth 5 uncapped calls leave it at 0 or above and
// serve at least 5 of them.
func TestStrictBillingOpenCompletion(t *testing.T) {
	apptest.Parallel(t)
	uncapped := tokenCost(2, 8, 0, fakeupstream.DefaultPromptTokens, hugeCompletion, 0, 1)
	money := 5*uncapped + 777
	for _, tc := range openCases {
		for _, acct := range []strictAccount{{"balance", false, money}, {"limited key", true, money}} {
			t.Run(tc.name+"/"+acct.name, func(t *testing.T) {
				s := newStrictRun(t, tc.typ, acct, fakeupstream.Behavior{CompletionTokens: hugeCompletion, HonourLimit: true, Delay: 50 * time.Millisecond})
				ok := s.parallel(t, tc.path, tc.body, strictParallel)
				s.checkNotNegative(t, acct)
				if ok < 5 {
					t.Errorf("%d of %d calls served from money worth 5 uncapped calls", ok, strictParallel)
				}
				for _, r := range s.up.Requests() {
					if lim := tc.limit(t, r.Body); lim < 1 || lim > 16384 {
						t.Fatalf("upstream got completion limit %d, want 1..16384 (DefaultCompletionSize): %s", lim, r.Body)
					}
				}
			})
		}
	}
}

// TestStrictBillingBoundedCalls: a call whose cost the request bounds
// (a completion limit, an embedding, a per-request price) is served only
// when the money covers that bound. The money covers 3 such calls and a
// half; the upstream reports as many prompt tokens as the body has bytes
// (the most the bound allows), so each served call costs nearly its bound.
// With DefaultCompletionSize 1 a hold is exactly the bound, so the 3 run
// in parallel.
func TestStrictBillingBoundedCalls(t *testing.T) {
	apptest.Parallel(t)
	withMax := func(b map[string]any, field string, n int) map[string]any {
		b[field] = n
		return b
	}
	embedding := map[string]any{"model": "gpt-test", "input": strings.Repeat("lorem ipsum ", 25)}
	cases := []struct {
		strictCase
		maxTokens  int64
		perRequest bool
	}{
		{strictCase{"chat passthrough", 1, "/v1/chat/completions", withMax(chatBody("gpt-test", "hi", false), "max_tokens", 100), nil}, 100, false},
		{strictCase{"chat passthrough max_completion_tokens", 1, "/v1/chat/completions", withMax(chatBody("gpt-test", "hi", true), "max_completion_tokens", 100), nil}, 100, false},
		{strictCase{"completions", 1, "/v1/completions", map[string]any{"model": "gpt-test", "prompt": "hi", "max_tokens": 100}, nil}, 100, false},
		{strictCase{"responses", 1, "/v1/responses", map[string]any{"model": "gpt-test", "input": "hi", "max_output_tokens": 100}, nil}, 100, false},
		{strictCase{"embeddings", 1, "/v1/embeddings", embedding, nil}, 0, false},
		{strictCase{"per-request price", 1, "/v1/chat/completions", chatBody("gpt-test", "hi", false), nil}, 0, true},
		{strictCase{"anthropic passthrough", channel.TypeAnthropic, "/v1/messages", withMax(messagesBody("hi", false), "max_tokens", 100), nil}, 100, false},
		{strictCase{"openai to anthropic", channel.TypeAnthropic, "/v1/chat/completions", withMax(chatBody("gpt-test", "hi", false), "max_tokens", 100), nil}, 100, false},
		{strictCase{"openai to gemini", channel.TypeGemini, "/v1/chat/completions", withMax(chatBody("gpt-test", "hi", true), "max_tokens", 100), nil}, 100, false},
	}
	const perRequestPrice = 0.015
	for _, tc := range cases {
		raw, _ := json.Marshal(tc.body)
		prompt := int64(len(raw))
		need := tokenCost(2, 8, 0, prompt+16, tc.maxTokens, 0, 1) // the documented prompt bound: body bytes + 16
		if tc.perRequest {
			need = int64(perRequestPrice * 1e6)
		}
		money := 3*need + need/2
		for _, acct := range []strictAccount{{"balance", false, money}, {"limited key", true, money}} {
			t.Run(tc.name+"/"+acct.name, func(t *testing.T) {
				s := newStrictRun(t, tc.typ, acct, fakeupstream.Behavior{PromptTokens: prompt,
					CompletionTokens: hugeCompletion, HonourLimit: true, Delay: 100 * time.Millisecond})
				s.g.SetOption("DefaultCompletionSize", "1")
				if tc.perRequest {
					s.g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": s.g.ModelPriceID(t, "gpt-test"),
						"billing_type": "per_request", "per_request_price": perRequestPrice})
				}
				ok := s.parallel(t, tc.path, tc.body, strictParallel)
				s.checkNotNegative(t, acct)
				if ok != 3 {
					t.Errorf("%d of %d calls served; the money covers 3 (each needs %d of %d)", ok, strictParallel, need, money)
				}
				if n := s.up.Count(); n != ok {
					t.Errorf("upstream called %d times for %d served calls: refused calls must not be forwarded", n, ok)
				}
			})
		}
	}
}

// TestStrictBillingOverrunOption: BillingOverrunAllowed restores the old
// rule: no limit is added, a call may cost more than it held, and parallel
// calls drive the balance below zero.
func TestStrictBillingOverrunOption(t *testing.T) {
	apptest.Parallel(t)
	uncapped := tokenCost(2, 8, 0, fakeupstream.DefaultPromptTokens, hugeCompletion, 0, 1)
	acct := strictAccount{"balance", false, 5*uncapped + 777}
	s := newStrictRun(t, 1, acct, fakeupstream.Behavior{CompletionTokens: hugeCompletion, HonourLimit: true, Delay: 50 * time.Millisecond})
	s.g.SetOption("BillingOverrunAllowed", "true")
	ok := s.parallel(t, "/v1/chat/completions", chatBody("gpt-test", "hi", false), strictParallel)
	if left := s.g.Quota(s.g.UserID); left >= 0 || ok <= 5 {
		t.Errorf("overrun allowed: %d calls served, balance %d; want more than 5 and below zero", ok, left)
	}
	if sent := s.up.LastRequest().Body; strings.Contains(string(sent), "max_tokens") {
		t.Errorf("overrun allowed: the relay added a limit: %s", sent)
	}
}

// TestStrictBillingChargesAtMostTheHold: an upstream that ignores the limit
// (or a prompt costlier than its bound) costs the user what was held, never
// more; the consume log says what was not collected.
func TestStrictBillingChargesAtMostTheHold(t *testing.T) {
	apptest.Parallel(t)
	const money = 20_000 // below one full hold: the call holds all of it
	acct := strictAccount{"balance", false, money}
	s := newStrictRun(t, 1, acct, fakeupstream.Behavior{CompletionTokens: hugeCompletion}) // the limit is ignored
	if r := s.e.Call(s.key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	s.checkNotNegative(t, acct)
	logs := s.g.ConsumeLogs()
	uncollected := tokenCost(2, 8, 0, fakeupstream.DefaultPromptTokens, hugeCompletion, 0, 1) - money
	if len(logs) != 1 || logs[0].Quota != money || !strings.Contains(logs[0].Content, "(超出预扣的 "+logtext.Money(msgtext.Chinese, uncollected)+" 未收取)") {
		t.Fatalf("logs %+v, want one of %d noting %d uncollected", logs, money, uncollected)
	}
	if left := s.g.Quota(s.g.UserID); left != 0 {
		t.Errorf("balance %d, want 0", left)
	}
}

// TestStrictBillingLimitOnTheWire: the limit goes into the body the
// upstream receives without re-encoding it (first field, the rest byte for
// byte), in the field the model takes, and a smaller client limit stays.
func TestStrictBillingLimitOnTheWire(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.UpdateChannel(g.ChannelID, map[string]any{"models": "gpt-test,o3-mini"})
	g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "o3-mini", "input_price": 2, "output_price": 8})
	sent := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"seed":7}`
	for _, tc := range []struct{ sent, want string }{
		{sent, `{"max_tokens":16384,` + sent[1:]},
		{strings.Replace(sent, "gpt-test", "o3-mini", 1), `{"max_completion_tokens":16384,` + strings.Replace(sent, "gpt-test", "o3-mini", 1)[1:]},
		{strings.Replace(sent, `"seed":7`, `"max_tokens":50`, 1), strings.Replace(sent, `"seed":7`, `"max_tokens":50`, 1)},
		// A stream also gets its usage turned on, in the same single copy.
		{strings.Replace(sent, `"seed":7`, `"stream":true`, 1),
			`{"max_tokens":16384,"stream_options":{"include_usage":true},` + strings.Replace(sent, `"seed":7`, `"stream":true`, 1)[1:]},
		// n completions: the hold covers n of them, each still 16384.
		{strings.Replace(sent, `"seed":7`, `"n":2`, 1), `{"max_tokens":16384,` + strings.Replace(sent, `"seed":7`, `"n":2`, 1)[1:]},
		// A limit the client sent as null is replaced (re-encoded: the
		// field exists), in the field the client used.
		{strings.Replace(sent, `"seed":7`, `"max_completion_tokens":null`, 1),
			`{"max_completion_tokens":16384,"messages":[{"role":"user","content":"hi"}],"model":"gpt-test"}`},
	} {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", tc.sent); r.Status != http.StatusOK {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
		if got := string(up.LastRequest().Body); got != tc.want {
			t.Errorf("upstream body\n got %s\nwant %s", got, tc.want)
		}
	}
}

func itoa(n int64) string { return apptest.Path("%d", n) }

// TestStrictBillingCountsChoices: n completions of up to max_tokens each
// cost up to n times as much; a balance that covers one is refused for two.
func TestStrictBillingCountsChoices(t *testing.T) {
	apptest.Parallel(t)
	body := withMaxTokens(chatBody("gpt-test", "hi", false), 1000)
	raw, _ := json.Marshal(body)
	one := tokenCost(2, 8, 0, int64(len(raw)+len(`,"n":2`))+16, 1000, 0, 1)
	acct := strictAccount{"balance", false, one + 100}
	s := newStrictRun(t, 1, acct, fakeupstream.Behavior{})
	s.g.SetOption("DefaultCompletionSize", "1")
	body["n"] = 2
	if r := s.e.Call(s.key, "POST", "/v1/chat/completions", body); r.Status != http.StatusTooManyRequests {
		t.Fatalf("n=2 on a balance for one: %d %s, want 429", r.Status, r.Body)
	}
	body["n"] = 1
	if r := s.e.Call(s.key, "POST", "/v1/chat/completions", body); r.Status != http.StatusOK {
		t.Fatalf("n=1: %d %s", r.Status, r.Body)
	}
}

func withMaxTokens(b map[string]any, n int) map[string]any {
	b["max_tokens"] = n
	return b
}

// TestStrictBillingSmallestLimit: a balance that buys the prompt bound and
// a few tokens serves a chat call capped at those tokens, and refuses a
// Responses call, whose max_output_tokens cannot be below 16; a balance
// that does not buy one token refuses both, and nothing reaches the
// upstream for a refused call.
func TestStrictBillingSmallestLimit(t *testing.T) {
	apptest.Parallel(t)
	chat, _ := json.Marshal(chatBody("gpt-test", "hi", false))
	resp, _ := json.Marshal(map[string]any{"model": "gpt-test", "input": "hi"})
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		tokens int64 // completion tokens the balance buys after the prompt bound
		ok     bool
	}{
		{"chat, 10 tokens", "/v1/chat/completions", chat, 10, true},
		{"chat, no token", "/v1/chat/completions", chat, 0, false},
		{"responses, 10 tokens", "/v1/responses", resp, 10, false},
		{"responses, 16 tokens", "/v1/responses", resp, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			money := tokenCost(2, 8, 0, int64(len(tc.body))+16, tc.tokens, 0, 1) + 7 // 7: less than one more token
			s := newStrictRun(t, 1, strictAccount{"balance", false, money}, fakeupstream.Behavior{CompletionTokens: hugeCompletion, HonourLimit: true})
			r := s.e.Call(s.key, "POST", tc.path, string(tc.body))
			if ok := r.Status == http.StatusOK; ok != tc.ok {
				t.Fatalf("%d %s, want ok=%v", r.Status, r.Body, tc.ok)
			}
			if !tc.ok {
				if r.Status != http.StatusTooManyRequests || s.up.Count() != 0 {
					t.Fatalf("refusal: %d %s, upstream called %d times", r.Status, r.Body, s.up.Count())
				}
				return
			}
			field := "max_tokens"
			if tc.path == "/v1/responses" {
				field = "max_output_tokens"
			}
			if lim := limitAt(field)(t, s.up.LastRequest().Body); lim != tc.tokens {
				t.Errorf("upstream limit %d, want %d", lim, tc.tokens)
			}
			s.checkNotNegative(t, strictAccount{"balance", false, money})
		})
	}
}
