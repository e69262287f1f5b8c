package relay_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// breakerFleet is a preferred channel (up0, priority 10, models gpt-test
// and gpt-b) and a fallback (up1, gpt-test only), on a clock the test
// moves, with two callers: keys[0] (the gateway's user) and keys[1] (a
// second user). A breaker opens only on failures of more than one caller,
// so the tests of a failing channel send their calls from both in turn.
type breakerFleet struct {
	*fleet
	clock *apptest.Clock
	keys  [2]string
}

func newBreakerFleet(t *testing.T) *breakerFleet {
	t.Helper()
	f := &breakerFleet{fleet: newFleet(t, 10, 0), clock: apptest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	f.e.App.SetClock(f.clock.Now)
	f.g.UpdateChannel(f.ids[0], map[string]any{"models": "gpt-test,gpt-b"})
	f.g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-b", "input_price": 2, "output_price": 8})
	f.keys[0] = f.g.Key
	f.keys[1] = f.newCaller(t, "caller2")
	return f
}

// newCaller is the key of a new funded user.
func (f *breakerFleet) newCaller(t *testing.T, name string) string {
	t.Helper()
	c, id := f.e.NewUser(name, 1)
	f.g.Root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 1_000_000_000})
	return c.CreateToken(map[string]any{"name": "relay", "unlimited_quota": true}).Key
}

// chatAs sends a chat call for model with key and prompt.
func (f *breakerFleet) chatAs(key, model, prompt string) *apptest.V1 {
	return f.e.Call(key, "POST", "/v1/chat/completions", map[string]any{"model": model,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
}

type breakerEvent struct {
	Time    int64  `json:"time"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	Probe   bool   `json:"probe"`
}

type breakerState struct {
	ChannelID           int64          `json:"channel_id"`
	Model               string         `json:"model"`
	State               string         `json:"state"`
	WindowCalls         int64          `json:"window_calls"`
	WindowFailures      int64          `json:"window_failures"`
	ConsecutiveFailures int64          `json:"consecutive_failures"`
	OpenedAt            int64          `json:"opened_at"`
	ProbeAt             int64          `json:"probe_at"`
	CoolDownSeconds     int64          `json:"cool_down_seconds"`
	FailedProbes        int64          `json:"failed_probes"`
	CoolingCallers      int64          `json:"cooling_callers"`
	LastErrors          []breakerEvent `json:"last_errors"`
}

type breakerList struct {
	Scope    string         `json:"scope"`
	Now      int64          `json:"now"`
	Breakers []breakerState `json:"breakers"`
}

// breaker is channel id's breaker for model, read through the admin route.
func (f *breakerFleet) breaker(t *testing.T, id int64, model string) breakerState {
	t.Helper()
	l := apptest.OKData[breakerList](f.g.Root, "GET", apptest.Path("/api/channel/breakers/%d", id), nil)
	if l.Scope != "node" {
		t.Fatalf("scope %q, want node", l.Scope)
	}
	for _, b := range l.Breakers {
		if b.Model == model {
			return b
		}
	}
	t.Fatalf("no breaker for channel %d model %s in %+v", id, model, l)
	return breakerState{}
}

func (f *breakerFleet) chatModel(model string) *apptest.V1 {
	return f.e.Call(f.g.Key, "POST", "/v1/chat/completions", map[string]any{"model": model,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
}

// openBreaker fails up0 five times in a row (the default
// ChannelBreakerConsecutiveFailures): each call is answered by up1.
func (f *breakerFleet) openBreaker(t *testing.T) {
	t.Helper()
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable,
		ErrorMessage: "overloaded; key upstream-key is fine"})
	for i := range 5 {
		if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "closed" {
			t.Fatalf("open after %d failures: %+v", i, b)
		}
		wantReply(t, f.chat(f.keys[i%2]), "up1")
	}
}

func (f *breakerFleet) waitState(t *testing.T, state string) breakerState {
	t.Helper()
	var b breakerState
	apptest.Eventually(t, "breaker "+state, func() bool {
		b = f.breaker(t, f.ids[0], "gpt-test")
		return b.State == state
	})
	return b
}

// Open → skip → probe with the model → close, through HTTP: the scenario
// of issue 13 §2.
func TestBreakerOpensSkipsProbesAndCloses(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.openBreaker(t)
	now := f.clock.Now().Unix()
	b := f.breaker(t, f.ids[0], "gpt-test")
	if b.State != "open" || b.OpenedAt != now || b.ProbeAt != now+30 || b.CoolDownSeconds != 30 || len(b.LastErrors) != 5 {
		t.Fatalf("after 5 failures: %+v", b)
	}
	e := b.LastErrors[0]
	if e.Status != 503 || e.Time != now || e.Probe || !strings.Contains(e.Message, "overloaded; key *** is fine") ||
		strings.Contains(e.Message, "upstream-key") {
		t.Fatalf("last error: %+v (want the upstream's message, key masked)", e)
	}
	wantCounts(t, f.fleet, 5, 5)

	// Open: gpt-test skips up0 at once; gpt-b, the channel's other model,
	// is still served by it.
	f.ups[0].SetBehavior(fakeupstream.Behavior{Reply: "up0"})
	wantReply(t, f.chat(""), "up1")
	wantCounts(t, f.fleet, 5, 6)
	wantReply(t, f.chatModel("gpt-b"), "up0")
	wantCounts(t, f.fleet, 6, 6)

	// Not yet due: no probe.
	f.clock.Advance(29 * time.Second)
	wantReply(t, f.chat(""), "up1")
	wantCounts(t, f.fleet, 6, 7)

	// Due: the next call for the model starts the probe (and is served by
	// up1); the probe is the one-token test with that model.
	f.clock.Advance(time.Second)
	wantReply(t, f.chat(""), "up1")
	f.waitState(t, "closed")
	wantCounts(t, f.fleet, 7, 8)
	probe := f.ups[0].LastRequest()
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	json.Unmarshal(probe.Body, &body)
	if probe.Model != "gpt-test" || body.MaxTokens != 1 {
		t.Fatalf("probe: model %q max_tokens %d, body %s", probe.Model, body.MaxTokens, probe.Body)
	}
	// Closed: up0 serves the model again, with a fresh window.
	wantReply(t, f.chat(""), "up0")
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.WindowCalls != 1 || b.WindowFailures != 0 || b.ProbeAt != 0 || b.OpenedAt != 0 {
		t.Fatalf("closed: %+v", b)
	}
}

// A probe that fails opens the breaker again for twice as long; the next
// one that succeeds closes it.
func TestBreakerFlapsWithGrowingCoolDown(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.openBreaker(t)
	f.clock.Advance(30 * time.Second)
	wantReply(t, f.chat(""), "up1") // starts the probe; up0 still fails
	var b breakerState
	apptest.Eventually(t, "the failed probe", func() bool {
		b = f.breaker(t, f.ids[0], "gpt-test")
		return b.FailedProbes == 1
	})
	now := f.clock.Now().Unix()
	if b.State != "open" || b.CoolDownSeconds != 60 || b.ProbeAt != now+60 || !b.LastErrors[0].Probe || b.LastErrors[0].Status != 503 {
		t.Fatalf("after a failed probe: %+v", b)
	}
	wantCounts(t, f.fleet, 6, 6)

	f.clock.Advance(30 * time.Second) // the first cool-down again: not enough
	wantReply(t, f.chat(""), "up1")
	wantCounts(t, f.fleet, 6, 7)

	f.clock.Advance(30 * time.Second) // a second probe, failing again: 120 s
	wantReply(t, f.chat(""), "up1")
	apptest.Eventually(t, "the second failed probe", func() bool {
		b = f.breaker(t, f.ids[0], "gpt-test")
		return b.FailedProbes == 2
	})
	if b.CoolDownSeconds != 120 {
		t.Fatalf("after two failed probes: %+v", b)
	}

	f.ups[0].SetBehavior(fakeupstream.Behavior{Reply: "up0"})
	f.clock.Advance(120 * time.Second)
	wantReply(t, f.chat(""), "up1")
	f.waitState(t, "closed")
	wantReply(t, f.chat(""), "up0")
	wantCounts(t, f.fleet, 9, 9)
}

// One error, or a few below the thresholds, leave the breaker closed.
func TestBreakerIgnoresAOneOffError(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusBadGateway})
	wantReply(t, f.chat(""), "up1")
	for range 3 {
		wantReply(t, f.chat(""), "up0")
	}
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError}, fakeupstream.Behavior{Status: 529},
		fakeupstream.Behavior{Garbage: true}, fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	for range 4 {
		wantReply(t, f.chat(""), "up1") // 4 failures in a row: one short of the default 5
	}
	b := f.breaker(t, f.ids[0], "gpt-test")
	if b.State != "closed" || b.WindowCalls != 8 || b.WindowFailures != 5 || b.ConsecutiveFailures != 4 || len(b.LastErrors) != 5 {
		t.Fatalf("want closed with 5 of 8 failed: %+v", b)
	}
	if b.LastErrors[1].Status != 200 || !strings.Contains(b.LastErrors[1].Message, "invalid") {
		t.Fatalf("the unreadable 200: %+v", b.LastErrors[1])
	}
	// The request's own 4xx and a 429 count neither way.
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusBadRequest}, fakeupstream.Behavior{Status: http.StatusTooManyRequests})
	if r := f.chat(""); r.Status != http.StatusBadRequest {
		t.Fatalf("want the 400 relayed, got %d", r.Status)
	}
	wantReply(t, f.chat(""), "up1")
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "closed" || b.WindowCalls != 8 || b.ConsecutiveFailures != 4 {
		t.Fatalf("a 400 or a 429 was counted: %+v", b)
	}
	// The window forgets: a minute later the same four failures count alone.
	f.clock.Advance(61 * time.Second)
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.WindowCalls != 0 {
		t.Fatalf("the window did not roll: %+v", b)
	}
}

// The error-rate rule: with ChannelBreakerMinCalls calls in the window and
// failures at the rate, the breaker opens without failures in a row.
func TestBreakerOpensOnErrorRate(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.g.SetOption("ChannelBreakerConsecutiveFailures", "0")
	f.g.SetOption("ChannelBreakerMinCalls", "6")
	ok, fail := fakeupstream.Behavior{Reply: "up0"}, fakeupstream.Behavior{Status: http.StatusInternalServerError}
	f.ups[0].Script(ok, fail, ok, fail, ok, fail)
	for i := range 6 {
		f.chat(f.keys[i/2%2]) // each caller has a success and a failure
	}
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "open" || b.WindowFailures != 0 {
		t.Fatalf("3 of 6 failed at 50%%: want open, got %+v", b)
	}
	wantReply(t, f.chat(""), "up1")
	wantCounts(t, f.fleet, 6, 4)
}

// A key refusal still disables the channel outright (and is no breaker
// failure); with the breaker off nothing opens.
func TestBreakerKeyRefusalAndOff(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusUnauthorized})
	wantReply(t, f.chat(""), "up1")
	if ch := f.g.ChannelState(f.ids[0]); ch.Status != 3 {
		t.Fatalf("want the channel auto-disabled, got %+v", ch)
	}
	l := apptest.OKData[breakerList](f.g.Root, "GET", apptest.Path("/api/channel/breakers/%d", f.ids[0]), nil)
	if len(l.Breakers) != 0 {
		t.Fatalf("a disabled channel keeps breakers: %+v", l)
	}

	f2 := newBreakerFleet(t)
	f2.g.SetOption("ChannelBreakerEnabled", "false")
	f2.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	for range 8 {
		wantReply(t, f2.chat(""), "up1")
	}
	wantCounts(t, f2.fleet, 8, 8)
	if b := f2.breaker(t, f2.ids[0], "gpt-test"); b.State != "closed" || b.WindowCalls != 0 {
		t.Fatalf("the breaker off still counted: %+v", b)
	}
}

// Hundreds of parallel calls finding the probe due send exactly one. The
// probe is held at the upstream (a gate, not a delay) until every call has
// been answered, so no call can see the breaker closed again however slowly
// the machine runs them (it once flaked under load with a 500 ms delay).
func TestBreakerSendsOneProbeUnderParallelCalls(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.g.SetQuota(1_000_000_000) // 200 holds at once
	f.openBreaker(t)
	gate := make(chan struct{})
	f.ups[0].SetBehavior(fakeupstream.Behavior{Reply: "up0", Gate: gate})
	f.clock.Advance(30 * time.Second)
	var wg sync.WaitGroup
	replies := make(chan *apptest.V1, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies <- f.chat("")
		}()
	}
	wg.Wait()
	close(replies)
	for r := range replies {
		wantReply(t, r, "up1")
	}
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "half_open" {
		t.Fatalf("with the probe held: %+v", b)
	}
	close(gate)
	f.waitState(t, "closed")
	if n := f.ups[0].Count(); n != 6 {
		t.Fatalf("up0 got %d requests: want 5 failures and exactly one probe", n)
	}
}

// The list route shows only breakers worth a look, and an admin's
// successful test of the model closes its breaker.
func TestBreakerListAndAdminTest(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	l := apptest.OKData[breakerList](f.g.Root, "GET", "/api/channel/breakers", nil)
	if len(l.Breakers) != 0 || l.Now != f.clock.Now().Unix() {
		t.Fatalf("quiet breakers listed: %+v", l)
	}
	f.openBreaker(t)
	l = apptest.OKData[breakerList](f.g.Root, "GET", "/api/channel/breakers", nil)
	if len(l.Breakers) != 1 || l.Breakers[0].ChannelID != f.ids[0] || l.Breakers[0].Model != "gpt-test" || l.Breakers[0].State != "open" {
		t.Fatalf("list: %+v", l)
	}
	f.g.User.Fail("GET", "/api/channel/breakers", nil, http.StatusOK, "无权进行此操作,权限不足")
	f.g.Root.Fail("GET", "/api/channel/breakers/999999", nil, http.StatusOK, "渠道不存在")

	f.ups[0].SetBehavior(fakeupstream.Behavior{})
	f.g.Root.OK("GET", apptest.Path("/api/channel/test/%d?model=gpt-test", f.ids[0]), nil)
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "closed" {
		t.Fatalf("a successful admin test left the breaker %+v", b)
	}
}

// When every channel of the model is skipped, the call gets the existing
// 503 no_channel without an upstream call, and pays nothing.
func TestBreakerAllSkippedIsNoChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusBadGateway})
	for i := range 5 { // gpt-b has only up0
		if r := f.chatAs(f.keys[i%2], "gpt-b", "hi"); r.Status != http.StatusBadGateway {
			t.Fatalf("want 502, got %d %s", r.Status, r.Body)
		}
	}
	before := f.g.Quota(f.g.UserID)
	r := f.chatModel("gpt-b")
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), `"no_channel"`) {
		t.Fatalf("want 503 no_channel, got %d %s", r.Status, r.Body)
	}
	if f.ups[0].Count() != 5 || f.g.Quota(f.g.UserID) != before {
		t.Fatalf("upstream calls %d (want 5), balance %d → %d", f.ups[0].Count(), before, f.g.Quota(f.g.UserID))
	}
	wantReply(t, f.chat(""), "up1") // gpt-test's breaker on up0 is closed, up0 fails: up1
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "closed" || b.WindowFailures != 1 {
		t.Fatalf("gpt-b's failures reached gpt-test's breaker: %+v", b)
	}
}

// A stream the upstream breaks after it started is the channel's failure.
func TestBreakerCountsBrokenStreams(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.ups[0].SetBehavior(fakeupstream.Behavior{FailAfter: 1, ResetOnCut: true})
	stream := map[string]any{"model": "gpt-test", "stream": true, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	for i := range 5 {
		if r := f.e.Call(f.keys[i%2], "POST", "/v1/chat/completions", stream); !strings.Contains(string(r.Body), "upstream stream broken") {
			t.Fatalf("want a broken stream, got %d %s", r.Status, r.Body)
		}
	}
	b := f.breaker(t, f.ids[0], "gpt-test")
	if b.State != "open" || b.LastErrors[0].Status != 0 || !strings.Contains(b.LastErrors[0].Message, "stream broken: ") {
		t.Fatalf("after 5 broken streams: %+v", b)
	}
	if r := f.e.Call(f.g.Key, "POST", "/v1/chat/completions", stream); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "[DONE]") {
		t.Fatalf("want a whole stream, got %d %s", r.Status, r.Body)
	}
	wantCounts(t, f.fleet, 5, 1)
}

// A probe answered 200 with something that is not JSON fails; a probe whose
// key is refused disables the channel, as a call's refusal would.
func TestBreakerProbeUnreadableAndKeyRefused(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	f.openBreaker(t)
	f.ups[0].SetBehavior(fakeupstream.Behavior{Garbage: true})
	f.clock.Advance(30 * time.Second)
	wantReply(t, f.chat(""), "up1")
	var b breakerState
	apptest.Eventually(t, "the failed probe", func() bool {
		b = f.breaker(t, f.ids[0], "gpt-test")
		return b.FailedProbes == 1
	})
	if b.State != "open" || b.LastErrors[0].Status != 200 || !b.LastErrors[0].Probe || !strings.Contains(b.LastErrors[0].Message, "invalid answer: <") {
		t.Fatalf("after an unreadable probe answer: %+v", b)
	}

	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusUnauthorized})
	f.clock.Advance(60 * time.Second)
	wantReply(t, f.chat(""), "up1")
	apptest.Eventually(t, "the channel disabled by its probe", func() bool { return f.g.ChannelState(f.ids[0]).Status == 3 })
	if ch := f.g.ChannelState(f.ids[0]); !strings.Contains(ch.LastError, "401") && !strings.Contains(ch.LastError, "error") {
		t.Fatalf("last_error of the disabled channel: %+v", ch)
	}
	wantReply(t, f.chatModel("gpt-test"), "up1")
	if r := f.chatModel("gpt-b"); r.Status == http.StatusOK {
		t.Fatalf("the disabled channel still serves gpt-b: %s", r.Body)
	}
}

// An upstream that refuses connections (no answer at all) opens the
// breaker like 5xx answers do; its events have status 0.
func TestBreakerCountsConnectionErrors(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	f.g.UpdateChannel(f.ids[0], map[string]any{"base_url": closed})
	for i := range 5 {
		wantReply(t, f.chat(f.keys[i%2]), "up1")
	}
	b := f.breaker(t, f.ids[0], "gpt-test")
	if b.State != "open" || b.LastErrors[0].Status != 0 || !strings.Contains(b.LastErrors[0].Message, "refused") {
		t.Fatalf("after 5 refused connections: %+v", b)
	}
}

// One user whose prompts make the upstream fail (issue 27 §3: five such
// calls used to switch the model off for everyone) cools down alone: on a
// model with one channel the user keeps getting the upstream's error,
// every other user is served, and the breaker stays closed; on a model with
// two channels the user's calls go to the other one first. Also with the
// user's calls and others' in parallel.
func TestBreakerOneCallerCannotTripIt(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	attacker, victim := f.keys[0], f.keys[1]
	f.ups[0].When("poison", fakeupstream.Behavior{Status: http.StatusInternalServerError})
	f.ups[1].When("poison", fakeupstream.Behavior{Status: http.StatusInternalServerError})
	for i := range 12 { // gpt-b: up0 only
		if r := f.chatAs(attacker, "gpt-b", "poison"); r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "上游返回 500") {
			t.Fatalf("poisoned call %d: want the upstream's 500 as a 502, got %d %s", i, r.Status, r.Body)
		}
		wantReply(t, f.chatAs(victim, "gpt-b", "hi"), "up0")
	}
	b := f.breaker(t, f.ids[0], "gpt-b")
	if b.State != "closed" || b.CoolingCallers != 1 {
		t.Fatalf("after one caller's 12 failures: %+v", b)
	}
	if f.ups[0].Count() != 24 {
		t.Fatalf("up0 got %d requests, want 24: the cooled-down caller's calls still reach the only channel", f.ups[0].Count())
	}

	// gpt-test: the attacker's calls fail on up0 five times (each retried
	// on up1, which fails too); then they go to up1 first.
	before := f.counts()
	for range 5 {
		f.chatAs(attacker, "gpt-test", "poison")
	}
	mid := f.counts()
	if mid[0]-before[0] != 5 {
		t.Fatalf("up0 got %d of the first 5 poisoned calls", mid[0]-before[0])
	}
	for range 5 {
		f.chatAs(attacker, "gpt-test", "poison")
		wantReply(t, f.chatAs(victim, "gpt-test", "hi"), "up0")
	}
	if after := f.counts(); after[0]-mid[0] != 5+5 {
		// The attacker's 5 calls reach up0 only as their retry, after up1
		// failed: each counted once, plus the victim's 5.
		t.Fatalf("up0 got %d requests for 5 poisoned and 5 plain calls", after[0]-mid[0])
	}
	if b := f.breaker(t, f.ids[0], "gpt-test"); b.State != "closed" || b.CoolingCallers != 1 {
		t.Fatalf("gpt-test on up0: %+v", b)
	}

	// In parallel: 100 poisoned calls and 100 others on gpt-b.
	var wg sync.WaitGroup
	replies := make(chan *apptest.V1, 100)
	for range 100 {
		wg.Add(2)
		go func() { defer wg.Done(); f.chatAs(attacker, "gpt-b", "poison") }()
		go func() { defer wg.Done(); replies <- f.chatAs(victim, "gpt-b", "hi") }()
	}
	wg.Wait()
	close(replies)
	for r := range replies {
		wantReply(t, r, "up0")
	}
	if b := f.breaker(t, f.ids[0], "gpt-b"); b.State != "closed" {
		t.Fatalf("after 100 parallel poisoned calls: %+v", b)
	}
}

// A real outage, failures from several callers, opens the breaker as fast
// as before: at the fifth failure in a row, and by the error rate.
func TestBreakerOutageOfSeveralCallersOpens(t *testing.T) {
	apptest.Parallel(t)
	f := newBreakerFleet(t)
	third := f.newCaller(t, "caller3")
	keys := []string{f.keys[0], third, f.keys[1]}
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	for i := range 5 {
		if b := f.breaker(t, f.ids[0], "gpt-b"); b.State != "closed" {
			t.Fatalf("open after %d failures: %+v", i, b)
		}
		f.chatAs(keys[i%3], "gpt-b", "hi")
	}
	if b := f.breaker(t, f.ids[0], "gpt-b"); b.State != "open" {
		t.Fatalf("after 5 failures of 3 callers: %+v", b)
	}
	if r := f.chatAs(keys[0], "gpt-b", "hi"); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), `"no_channel"`) {
		t.Fatalf("want 503 no_channel, got %d %s", r.Status, r.Body)
	}

	// One caller's four failures, then another's: the fifth opens it.
	f2 := newBreakerFleet(t)
	f2.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})
	for range 4 {
		f2.chatAs(f2.keys[0], "gpt-b", "hi")
	}
	f2.chatAs(f2.keys[1], "gpt-b", "hi")
	if b := f2.breaker(t, f2.ids[0], "gpt-b"); b.State != "open" {
		t.Fatalf("after 4 + 1 failures of 2 callers: %+v", b)
	}
}
