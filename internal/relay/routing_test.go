package relay_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// fleet is a gateway with several OpenAI-compatible channels for
// gpt-test, each on its own fake upstream: channel i is ups[i], ids[i].
type fleet struct {
	e   *apptest.Env
	g   *apptest.Gateway
	ups []*fakeupstream.Server
	ids []int64
}

// newFleet starts len(priorities) channels with those priorities and weight
// 1; each upstream replies with its own name ("up0", "up1", …).
func newFleet(t *testing.T, priorities ...int64) *fleet {
	t.Helper()
	f := &fleet{e: apptest.New(t)}
	for i, p := range priorities {
		up := fakeupstream.New(t)
		up.SetBehavior(fakeupstream.Behavior{Reply: apptest.Path("up%d", i)})
		f.ups = append(f.ups, up)
		if i == 0 {
			f.g = f.e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
			f.g.UpdateChannel(f.g.ChannelID, map[string]any{"priority": p})
			f.ids = append(f.ids, f.g.ChannelID)
			continue
		}
		f.ids = append(f.ids, f.g.AddChannel(apptest.ChannelSpec{URL: up.URL, Name: apptest.Path("up%d", i), Priority: p}))
	}
	return f
}

// chat sends a plain chat call with key (the gateway's when empty).
func (f *fleet) chat(key string) *apptest.V1 {
	if key == "" {
		key = f.g.Key
	}
	return f.e.Call(key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
}

// counts is how many requests each upstream received.
func (f *fleet) counts() []int {
	out := make([]int, len(f.ups))
	for i, up := range f.ups {
		out[i] = up.Count()
	}
	return out
}

func wantCounts(t *testing.T, f *fleet, want ...int) {
	t.Helper()
	got := f.counts()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("upstream requests %v, want %v", got, want)
		}
	}
}

func wantReply(t *testing.T, r *apptest.V1, reply string) {
	t.Helper()
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"content":"`+reply+`"`) {
		t.Fatalf("want 200 from %s, got %d %s", reply, r.Status, r.Body)
	}
}

func TestRetryAfter500AnswersFromTheNextChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	before := f.g.Quota(f.g.UserID)
	wantReply(t, f.chat(""), "up1")
	wantCounts(t, f, 1, 1)
	logs := f.g.AllConsumeLogs()
	if len(logs) != 1 || logs[0].ChannelID != f.ids[1] || logs[0].Quota != 88 {
		t.Fatalf("want one log of 88 for channel %d, got %+v", f.ids[1], logs)
	}
	if spent := before - f.g.Quota(f.g.UserID); spent != 88 {
		t.Fatalf("spent %d, want 88 (one call, billed once)", spent)
	}
	// The failed channel stays in service: the next call goes to it.
	wantReply(t, f.chat(""), "up0")
}

func TestRetryTimesBoundsTheAttempts(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 30, 20, 10)
	for _, up := range f.ups {
		up.SetBehavior(fakeupstream.Behavior{Status: http.StatusBadGateway})
	}
	before := f.g.Quota(f.g.UserID)
	r := f.chat("") // default RetryTimes 2: all three channels
	if r.Status != http.StatusBadGateway {
		t.Fatalf("want 502, got %d %s", r.Status, r.Body)
	}
	wantCounts(t, f, 1, 1, 1)

	f.g.SetOption("RetryTimes", "1")
	if r := f.chat(""); r.Status != http.StatusBadGateway {
		t.Fatalf("want 502, got %d %s", r.Status, r.Body)
	}
	wantCounts(t, f, 2, 2, 1)
	if got := f.g.Quota(f.g.UserID); got != before || len(f.g.AllConsumeLogs()) != 0 {
		t.Fatalf("failed calls billed: balance %d → %d", before, got)
	}
}

func TestRetryTimesZeroRelaysTheFailure(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.g.SetOption("RetryTimes", "0")
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError},
		fakeupstream.Behavior{Status: http.StatusTooManyRequests})
	r := f.chat("")
	if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "500") {
		t.Fatalf("500 without retry: want 502 naming 500, got %d %s", r.Status, r.Body)
	}
	if r := f.chat(""); r.Status != http.StatusTooManyRequests {
		t.Fatalf("429 without retry: want 429, got %d %s", r.Status, r.Body)
	}
	wantCounts(t, f, 2, 0)
}

func TestRateLimitedChannelCoolsDown(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.g.SetOption("ChannelCooldownSeconds", "1")
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusTooManyRequests})
	wantReply(t, f.chat(""), "up1") // retried on the lower tier
	wantCounts(t, f, 1, 1)
	for range 3 { // cooling down: the preferred channel is skipped
		wantReply(t, f.chat(""), "up1")
	}
	wantCounts(t, f, 1, 4)
	time.Sleep(1100 * time.Millisecond)
	wantReply(t, f.chat(""), "up0") // back after the cooldown
	wantCounts(t, f, 2, 4)
}

func TestUpstreamKeyRefusedDisablesTheChannel(t *testing.T) {
	apptest.Parallel(t)
	for name, refusal := range map[string]fakeupstream.Behavior{
		"401":                 {Status: http.StatusUnauthorized},
		"403 invalid_api_key": {Status: http.StatusForbidden, ErrorCode: "invalid_api_key"},
		"403 account":         {Status: http.StatusForbidden, ErrorCode: "account_deactivated"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, 10, 0)
			refusal.ErrorMessage = "key revoked upstream-key"
			f.ups[0].Script(refusal)
			wantReply(t, f.chat(""), "up1")
			ch := f.g.ChannelState(f.ids[0])
			if ch.Status != 3 || !strings.Contains(ch.LastError, "key revoked") || strings.Contains(ch.LastError, "upstream-key") {
				t.Fatalf("want status 3 with the upstream's message, key scrubbed; got %+v", ch)
			}
			for range 3 {
				wantReply(t, f.chat(""), "up1")
			}
			wantCounts(t, f, 1, 4)
			// An admin re-enables it: it serves again at once.
			f.g.UpdateChannel(f.ids[0], map[string]any{"status": 1})
			wantReply(t, f.chat(""), "up0")
			if ch := f.g.ChannelState(f.ids[0]); ch.Status != 1 {
				t.Fatalf("re-enabled channel has status %d", ch.Status)
			}
		})
	}
}

func TestHigherPriorityAlwaysWins(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 0, 5, 1) // channel 1 is the highest tier
	for range 20 {
		wantReply(t, f.chat(""), "up1")
	}
	wantCounts(t, f, 0, 20, 0)
	// Down to the next tier only while the best one fails.
	f.ups[1].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	wantReply(t, f.chat(""), "up2")
}

func TestWeightsSplitATier(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 0, 0)
	f.g.UpdateChannel(f.ids[1], map[string]any{"weight": 3})
	const calls = 200
	for range calls {
		if r := f.chat(""); r.Status != http.StatusOK {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
	}
	got := f.counts()
	// Expected 50 and 150; the bounds are more than four standard
	// deviations (≈6.1) wide, so a correct split fails about once in 10⁵.
	if got[0]+got[1] != calls || got[0] < 25 || got[0] > 80 {
		t.Fatalf("weights 1:3 over %d calls split %v", calls, got)
	}
}

// No channel in the group: the model is not offered to this caller (404);
// channels that exist but all cool down are temporary (503).
func TestNoChannelAnswers404NamingGroupAndModel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 0)
	f.g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "orphan-model", "input_price": 1, "output_price": 1})
	before := f.g.Quota(f.g.UserID)
	r := f.e.Call(f.g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "orphan-model",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), "default") ||
		!strings.Contains(string(r.Body), "orphan-model") || !strings.Contains(string(r.Body), `"code":"model_not_found"`) {
		t.Fatalf("want 404 model_not_found naming group and model, got %d %s", r.Status, r.Body)
	}
	// The Anthropic ingress gets the same in Anthropic's error shape.
	r = f.e.Call(f.g.Key, "POST", "/v1/messages", map[string]any{"model": "orphan-model", "max_tokens": 10,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"type":"not_found_error"`) ||
		!strings.Contains(string(r.Body), "orphan-model") {
		t.Fatalf("/v1/messages: want 404 in Anthropic's shape, got %d %s", r.Status, r.Body)
	}
	// Every candidate cooling down leaves none either; the hold is released.
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusTooManyRequests})
	if r := f.chat(""); r.Status != http.StatusTooManyRequests {
		t.Fatalf("only channel rate limited: want 429, got %d %s", r.Status, r.Body)
	}
	if r := f.chat(""); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("only channel cooling down: want 503, got %d %s", r.Status, r.Body)
	}
	if got := f.g.Quota(f.g.UserID); got != before {
		t.Fatalf("balance %d → %d after calls that reached no channel", before, got)
	}
}

func TestAdminPinsAChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	var root apptest.UserInfo
	f.g.Root.OK("GET", "/api/user/self", nil).Decode(t, &root)
	f.g.Root.OK("POST", "/api/topup", map[string]any{"user_id": root.ID, "quota": 1_000_000})
	key := f.g.Root.CreateToken(map[string]any{"name": "pin", "unlimited_quota": true}).Key
	pin := func(id int64) string { return apptest.Path("%s-%d", key, id) }

	for range 5 { // the lower tier, chosen by the admin
		wantReply(t, f.chat(pin(f.ids[1])), "up1")
	}
	wantCounts(t, f, 0, 5)
	// A pinned call is not retried elsewhere.
	f.ups[1].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	if r := f.chat(pin(f.ids[1])); r.Status != http.StatusBadGateway {
		t.Fatalf("pinned channel failing: want 502, got %d %s", r.Status, r.Body)
	}
	wantCounts(t, f, 0, 6)
	// Unknown, disabled, or not serving the model: 400 naming the channel
	// (the pin is the caller's choice, docs/decisions/relay-auth.md).
	f.g.UpdateChannel(f.ids[0], map[string]any{"status": 2})
	other := f.g.AddChannel(apptest.ChannelSpec{URL: f.ups[1].URL, Models: "other-model"})
	for _, id := range []int64{999, f.ids[0], other} {
		r := f.chat(pin(id))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), apptest.Path("%d", id)) {
			t.Fatalf("pinned to %d: want 400 naming it, got %d %s", id, r.Status, r.Body)
		}
	}
	wantCounts(t, f, 0, 6)
	// A user who is not an admin may not pin.
	if r := f.chat(f.g.Pinned(f.ids[1])); r.Status != http.StatusForbidden {
		t.Fatalf("user pinning: want 403, got %d %s", r.Status, r.Body)
	}
}

func TestRetryAfterConnectErrorAndAcrossDialects(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 30)
	claude := fakeupstream.New(t)
	claude.SetBehavior(fakeupstream.Behavior{Status: 529})
	gem := fakeupstream.New(t)
	gem.SetBehavior(fakeupstream.Behavior{Reply: "from gemini"})
	// Closed after the fakes listen, so neither can be given its port: a
	// fake on the freed port answered as "gone" too (a flaky count of 2).
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there any more
	f.g.AddChannel(apptest.ChannelSpec{URL: closedURL, Name: "gone", Priority: 40})
	f.g.AddChannel(apptest.ChannelSpec{URL: claude.URL, Type: 14, Name: "claude", Priority: 35})
	f.g.AddChannel(apptest.ChannelSpec{URL: gem.URL, Type: 24, Name: "gemini", Priority: 32})
	// Refused connection → Anthropic overloaded (529) → Gemini answers,
	// converted back to OpenAI's shape; the OpenAI channel is never needed.
	wantReply(t, f.chat(""), "from gemini")
	if claude.Count() != 1 || gem.Count() != 1 || f.ups[0].Count() != 0 {
		t.Fatalf("requests: anthropic %d, gemini %d, openai %d", claude.Count(), gem.Count(), f.ups[0].Count())
	}
}

func TestGeminiInvalidKeyDisablesTheChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 0)
	gem := fakeupstream.New(t, fakeupstream.WithKey("rotated-key"))
	id := f.g.AddChannel(apptest.ChannelSpec{URL: gem.URL, Type: 24, Name: "gemini", Priority: 10})
	// Gemini answers a bad key with 400 API_KEY_INVALID, never 401.
	wantReply(t, f.chat(""), "up0")
	if ch := f.g.ChannelState(id); ch.Status != 3 || !strings.Contains(ch.LastError, "API key not valid") {
		t.Fatalf("want the Gemini channel auto-disabled, got %+v", ch)
	}
	wantReply(t, f.chat(""), "up0")
	if gem.Count() != 1 {
		t.Fatalf("disabled channel called %d times", gem.Count())
	}
	// Any other 400 is the request's fault: relayed, the channel kept.
	f.g.UpdateChannel(id, map[string]any{"status": 1, "key": "rotated-key"})
	gem.Script(fakeupstream.Behavior{Status: http.StatusBadRequest})
	if r := f.chat(""); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "invalid argument") {
		t.Fatalf("Gemini 400: want it relayed, got %d %s", r.Status, r.Body)
	}
	if ch := f.g.ChannelState(id); ch.Status != 1 {
		t.Fatalf("a bad request disabled the channel: %+v", ch)
	}
}
