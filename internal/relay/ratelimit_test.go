package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/apptest/redisserver"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/token"
)

// Rate and concurrency limits (docs/decisions/rate-limits.md) through the
// real HTTP surface. With MODELGATE_TEST_REDIS set every gateway here
// counts in Redis, so the same tests hold the Redis script to the rules.

// windowStart is a time 1 s into a minute window, so a test's calls all
// fall in one window and Retry-After is 59.
var windowStart = time.Unix(1_800_000_000-1_800_000_000%60+1, 0)

// limitGateway is a gateway whose clock stands at windowStart.
func limitGateway(t *testing.T, env ...string) (*apptest.Env, *fakeupstream.Server, *apptest.Gateway, *apptest.Clock) {
	t.Helper()
	e := apptest.New(t, env...)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Quota: 1_000_000_000})
	clock := apptest.NewClock(windowStart)
	e.App.SetClock(clock.Now)
	return e, up, g, clock
}

// setKeyLimits sets the three limits of the gateway's key through the API.
func setKeyLimits(t *testing.T, g *apptest.Gateway, rpm, tpm, conc int64) {
	t.Helper()
	g.User.OK("PUT", "/api/token/", map[string]any{"id": g.TokenID(), "rpm_limit": rpm, "tpm_limit": tpm, "concurrency_limit": conc})
}

// outcome counts the answers of parallel calls and keeps one refusal.
type outcome struct {
	mu      sync.Mutex
	status  map[int]int
	refusal *apptest.V1
}

func (o *outcome) add(r *apptest.V1) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.status == nil {
		o.status = map[int]int{}
	}
	o.status[r.Status]++
	if r.Status == http.StatusTooManyRequests && o.refusal == nil {
		o.refusal = r
	}
}

// parallel sends n calls at once with each key in turn (round robin) to
// e and counts the answers.
func parallel(e *apptest.Env, n int, body any, keys ...string) *outcome {
	o := &outcome{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		key := keys[i%len(keys)]
		wg.Go(func() {
			<-start
			o.add(e.Call(key, "POST", "/v1/chat/completions", body))
		})
	}
	close(start)
	wg.Wait()
	return o
}

// TestRateLimitKeyRPM: 300 parallel calls against a key's RPM of 10 serve
// 10; the rest get OpenAI's 429 naming the limit, with Retry-After and the
// x-ratelimit headers, and move no money. The next window serves again.
func TestRateLimitKeyRPM(t *testing.T) {
	apptest.Parallel(t)
	e, up, g, clock := limitGateway(t)
	setKeyLimits(t, g, 10, 0, 0)
	before := g.Quota(g.UserID)
	o := parallel(e, 300, chatBody("gpt-test", "hi", false), g.Key)
	if o.status[http.StatusOK] != 10 || o.status[http.StatusTooManyRequests] != 290 {
		t.Fatalf("answers %v, want 10 × 200 and 290 × 429", o.status)
	}
	if n := up.Count(); n != 10 {
		t.Errorf("upstream saw %d calls, want 10", n)
	}
	r := o.refusal
	got := decodeV1Error(t, r)
	if got.Error.Code != "rate_limit_exceeded" || got.Error.Type != "requests" || got.Error.Message != "令牌每分钟请求数限制 10 已达到" {
		t.Errorf("error %+v", got.Error)
	}
	for k, want := range map[string]string{"Retry-After": "59", "X-Ratelimit-Limit-Requests": "10",
		"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "59s"} {
		if v := r.Header.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	logs := g.ConsumeLogs()
	if len(logs) != 10 || before-g.Quota(g.UserID) != apptest.SumQuota(logs) {
		t.Errorf("%d consume logs, balance moved %d for %d billed: refused calls must cost nothing",
			len(logs), before-g.Quota(g.UserID), apptest.SumQuota(logs))
	}
	// Anthropic clients get Anthropic's shape with the same headers.
	msg := map[string]any{"model": "gpt-test", "max_tokens": 64, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	ar := e.Call("", "POST", "/v1/messages", msg, "x-api-key", g.Key, "anthropic-version", "2023-06-01")
	var ae struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	ar.JSON(t, &ae)
	if ar.Status != http.StatusTooManyRequests || ae.Type != "error" || ae.Error.Type != "rate_limit_error" ||
		ae.Error.Message != "令牌每分钟请求数限制 10 已达到" || ar.Header.Get("Retry-After") != "59" {
		t.Errorf("anthropic refusal: %d %s %v", ar.Status, ar.Body, ar.Header)
	}
	// English messages follow MessageLanguage.
	g.SetOption("MessageLanguage", "en")
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); decodeV1Error(t, r).Error.Message != "key rpm limit 10 reached" {
		t.Errorf("english refusal %s", r.Body)
	}
	clock.Advance(time.Minute)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("next window: %d %s", r.Status, r.Body)
	}
	// The counters were where the run contract says: Redis when set.
	var st struct {
		Backend     string `json:"backend"`
		RedisErrors int64  `json:"redis_errors"`
		Refused     int64  `json:"refused"`
	}
	g.Root.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
	want := "memory"
	if os.Getenv("MODELGATE_TEST_REDIS") != "" {
		want = "redis"
	}
	if st.Backend != want || st.RedisErrors != 0 || st.Refused != 292 {
		t.Errorf("status %+v, want backend %s, no redis errors, 292 refused", st, want)
	}
}

// TestRateLimitGroupPerUser: a group's RPM applies to each of its users on
// their own, over all their keys together.
func TestRateLimitGroupPerUser(t *testing.T) {
	apptest.Parallel(t)
	e, _, g, _ := limitGateway(t)
	g.SetOption("GroupRateLimits", `{"default":{"rpm":5}}`)
	second := g.User.CreateToken(map[string]any{"name": "second", "unlimited_quota": true}).Key
	other, otherID := e.NewUser("other", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": otherID, "quota": 100_000_000})
	otherKey := other.CreateToken(map[string]any{"name": "k", "unlimited_quota": true}).Key

	o := parallel(e, 200, chatBody("gpt-test", "hi", false), g.Key, second, otherKey, otherKey)
	if o.status[http.StatusOK] != 10 {
		t.Fatalf("answers %v, want 10 served: 5 per user", o.status)
	}
	if logs := g.ConsumeLogs(); len(logs) != 5 {
		t.Errorf("user 1 served %d, want 5", len(logs))
	}
	got := decodeV1Error(t, o.refusal)
	if got.Error.Message != "分组 default 每用户每分钟请求数限制 5 已达到" {
		t.Errorf("error %+v", got.Error)
	}
	// A key may not promise more than its group allows.
	g.User.Fail("PUT", "/api/token/", map[string]any{"id": g.TokenID(), "rpm_limit": 6}, http.StatusOK,
		"rpm_limit 不能超过所在分组 default 的限制 5")
}

// TestRateLimitConcurrency: calls in flight are held to the key's limit
// and to the group's per-user limit; the slots come back when calls end.
func TestRateLimitConcurrency(t *testing.T) {
	apptest.Parallel(t)
	e, up, g, _ := limitGateway(t)
	up.SetBehavior(fakeupstream.Behavior{Delay: 3 * time.Second})
	setKeyLimits(t, g, 0, 0, 3)
	if o := parallel(e, 60, chatBody("gpt-test", "hi", false), g.Key); o.status[http.StatusOK] != 3 {
		t.Fatalf("answers %v, want 3 served", o.status)
	} else if got := decodeV1Error(t, o.refusal); got.Error.Message != "令牌并发请求数限制 3 已达到" || o.refusal.Header.Get("Retry-After") != "1" {
		t.Errorf("refusal %+v, Retry-After %q", got.Error, o.refusal.Header.Get("Retry-After"))
	}
	// All three slots are free again.
	up.SetBehavior(fakeupstream.Behavior{Delay: 200 * time.Millisecond})
	if o := parallel(e, 3, chatBody("gpt-test", "hi", false), g.Key); o.status[http.StatusOK] != 3 {
		t.Fatalf("after the calls ended: %v, want 3 served", o.status)
	}

	// The group's limit counts the user's keys together.
	setKeyLimits(t, g, 0, 0, 0)
	g.SetOption("GroupRateLimits", `{"default":{"concurrency":2}}`)
	second := g.User.CreateToken(map[string]any{"name": "second", "unlimited_quota": true}).Key
	up.SetBehavior(fakeupstream.Behavior{Delay: 3 * time.Second})
	if o := parallel(e, 40, chatBody("gpt-test", "hi", false), g.Key, second); o.status[http.StatusOK] != 2 {
		t.Fatalf("group: answers %v, want 2 served", o.status)
	}
}

// TestRateLimitTPMSettles: a call holds its estimate (prompt bound +
// max_tokens) while it runs and settles to what it used, so parallel
// calls are refused by the estimate while sequential ones fit once the
// first used far less.
func TestRateLimitTPMSettles(t *testing.T) {
	apptest.Parallel(t)
	e, up, g, clock := limitGateway(t)
	body := chatBody("gpt-test", "hi", false)
	body["max_tokens"] = 1000
	// Estimate ≈ 1000 + the body's bound (about 100): two do not fit in
	// 1500, while a used 20 (12 + 8) and one estimate do.
	setKeyLimits(t, g, 0, 1500, 0)
	up.SetBehavior(fakeupstream.Behavior{Delay: 2 * time.Second})
	o := parallel(e, 20, body, g.Key)
	if o.status[http.StatusOK] != 1 {
		t.Fatalf("parallel: %v, want 1 served", o.status)
	}
	r := o.refusal
	if got := decodeV1Error(t, r); got.Error.Type != "tokens" || got.Error.Message != "令牌每分钟 token 数限制 1500 已达到" {
		t.Errorf("error %+v", got.Error)
	}
	if r.Header.Get("X-Ratelimit-Limit-Tokens") != "1500" || r.Header.Get("X-Ratelimit-Reset-Tokens") != "59s" {
		t.Errorf("token headers %v", r.Header)
	}
	// Settled to 20: the remaining-tokens header shows it (1500 − 20 − the
	// estimate held by the refused call = nothing held: remaining after 20).
	up.SetBehavior(fakeupstream.Behavior{})
	for i := range 5 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", body); r.Status != http.StatusOK {
			t.Fatalf("sequential call %d: %d %s: the estimate was not settled to the usage", i, r.Status, r.Body)
		}
	}
	// 6 calls used 120 tokens: another estimate no longer fits when it
	// is over 1380.
	big := chatBody("gpt-test", "hi", false)
	big["max_tokens"] = 1380
	r = e.Call(g.Key, "POST", "/v1/chat/completions", big)
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("estimate over what is left: %d %s", r.Status, r.Body)
	}
	if rem, _ := strconv.Atoi(r.Header.Get("X-Ratelimit-Remaining-Tokens")); rem != 1500-120 {
		t.Errorf("remaining tokens %d, want %d", rem, 1500-120)
	}

	// A completion limit near int64's cannot wrap the estimate negative
	// (which would free tokens): refused, and the count is unchanged.
	huge := chatBody("gpt-test", "hi", false)
	huge["max_tokens"], huge["n"] = int64(math.MaxInt64/2+1), 2
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", huge); r.Status != http.StatusTooManyRequests || decodeV1Error(t, r).Error.Type != "tokens" {
		t.Fatalf("huge max_tokens: %d %s, want 429 tokens", r.Status, r.Body)
	}
	small := chatBody("gpt-test", "hi", false)
	small["max_tokens"] = 1380 - 200
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", small); r.Status != http.StatusOK {
		t.Fatalf("after the huge one: %d %s", r.Status, r.Body)
	}

	// The group's TPM, per user, over the user's keys, in the next window.
	clock.Advance(time.Minute)
	setKeyLimits(t, g, 0, 0, 0)
	g.SetOption("GroupRateLimits", `{"default":{"tpm":1500}}`)
	second := g.User.CreateToken(map[string]any{"name": "second", "unlimited_quota": true}).Key
	up.SetBehavior(fakeupstream.Behavior{Delay: 2 * time.Second})
	if o := parallel(e, 20, body, g.Key, second); o.status[http.StatusOK] != 1 {
		t.Fatalf("group tpm: %v, want 1 served", o.status)
	} else if got := decodeV1Error(t, o.refusal); got.Error.Message != "分组 default 每用户每分钟 token 数限制 1500 已达到" {
		t.Errorf("group tpm error %+v", got.Error)
	}
}

// TestRateLimitSlotReleased: a concurrency slot comes back when the
// upstream fails and when the client leaves mid-stream.
func TestRateLimitSlotReleased(t *testing.T) {
	apptest.Parallel(t)
	e, up, g, _ := limitGateway(t)
	g.SetOption("StreamDrainSeconds", "0")
	g.SetOption("RetryTimes", "0")
	setKeyLimits(t, g, 0, 0, 1)
	up.Script(fakeupstream.Behavior{Status: 500})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status < 500 {
		t.Fatalf("upstream failure: %d %s", r.Status, r.Body)
	}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("after an upstream failure: %d %s: the slot was kept", r.Status, r.Body)
	}

	// A client that leaves a slow stream.
	up.SetBehavior(fakeupstream.Behavior{Chunks: 50, ChunkDelay: 200 * time.Millisecond, Reply: string(make([]byte, 50))})
	ctx, cancel := context.WithCancel(context.Background())
	buf, _ := json.Marshal(chatBody("gpt-test", "hi", true))
	req, _ := http.NewRequestWithContext(ctx, "POST", e.Server.URL+"/v1/chat/completions", bytesReader(buf))
	req.Header.Set("Authorization", "Bearer "+g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", err, resp)
	}
	// While it streams, the key's one slot is taken.
	up.SetBehavior(fakeupstream.Behavior{})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("during the stream: %d %s, want 429", r.Status, r.Body)
	}
	cancel()
	resp.Body.Close()
	apptest.Eventually(t, "the slot of the abandoned stream", func() bool {
		return e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)).Status == http.StatusOK
	})
}

// TestRateLimitRedisDown: with Redis unreachable the default fails open to
// this node's own counters (the limit still holds on the node), the
// outage is one incident in the admin status, and RateLimitFailClosed
// refuses limited calls with 503 instead. Unlimited calls never notice.
func TestRateLimitRedisDown(t *testing.T) {
	apptest.Parallel(t)
	e, _, g, clock := limitGateway(t, "REDIS_CONN_STRING", "redis://127.0.0.1:1/0")
	setKeyLimits(t, g, 3, 0, 0)
	o := 0
	for range 10 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status == http.StatusOK {
			o++
		} else if r.Status != http.StatusTooManyRequests {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	if o != 3 {
		t.Fatalf("served %d, want 3 (node-local limit while Redis is down)", o)
	}
	var st struct {
		Backend        string `json:"backend"`
		RedisDown      bool   `json:"redis_down"`
		RedisErrors    int64  `json:"redis_errors"`
		RedisIncidents int64  `json:"redis_incidents"`
		Refused        int64  `json:"refused"`
		FailedClosed   int64  `json:"failed_closed"`
		FailClosed     bool   `json:"fail_closed"`
	}
	g.Root.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
	if st.Backend != "redis" || !st.RedisDown || st.RedisIncidents != 1 || st.RedisErrors < 1 || st.Refused != 7 || st.FailClosed {
		t.Errorf("status %+v", st)
	}
	g.User.Fail("GET", "/api/ratelimit/status", nil, http.StatusOK, "")

	g.SetOption("RateLimitFailClosed", "true")
	// In the same minute the node's own count refuses first: the limit
	// is known to be reached. In the next one only Redis could say.
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("fail closed, limit reached on the node: %d %s", r.Status, r.Body)
	}
	clock.Advance(time.Minute)
	r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusServiceUnavailable || decodeV1Error(t, r).Error.Code != "rate_limit_unavailable" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("fail closed: %d %s", r.Status, r.Body)
	}
	// A key without limits is not affected by the outage.
	setKeyLimits(t, g, 0, 0, 0)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("unlimited key: %d %s", r.Status, r.Body)
	}
	g.Root.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
	if st.FailedClosed != 1 || st.RedisIncidents != 1 || !st.FailClosed {
		t.Errorf("status after fail closed %+v", st)
	}
}

// TestRateLimitRedisFrozen (issue 25): a gateway failing open while its
// Redis is frozen (SIGSTOP) serves no more in the minute than its limit:
// the calls it served through Redis count. When Redis resumes, the
// admissions it ran late hold no concurrency slot: two slow calls at once
// are served again, a third at the same time is refused.
func TestRateLimitRedisFrozen(t *testing.T) {
	apptest.Parallel(t)
	srv := redisserver.Start(t)
	e, up, g, clock := limitGateway(t, "REDIS_CONN_STRING", srv.URL)
	setKeyLimits(t, g, 5, 0, 2)
	call := func() int {
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
		if r.Status != http.StatusOK && r.Status != http.StatusTooManyRequests {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.Status
	}
	for range 3 {
		if s := call(); s != http.StatusOK {
			t.Fatalf("before the outage: %d", s)
		}
	}
	srv.Freeze(t)
	served := 0
	for range 7 {
		if call() == http.StatusOK {
			served++
		}
	}
	if served != 2 {
		t.Errorf("served %d during the outage, want 2 (5 in the minute: the 3 served through Redis count)", served)
	}
	srv.Resume(t)
	for range 3 {
		if s := call(); s != http.StatusTooManyRequests {
			t.Fatalf("after the resume, same minute: %d, want 429", s)
		}
	}

	clock.Advance(time.Minute)
	setKeyLimits(t, g, 0, 0, 2)
	up.SetBehavior(fakeupstream.Behavior{Delay: 500 * time.Millisecond})
	var st struct {
		RedisDown bool `json:"redis_down"`
	}
	apptest.Eventually(t, "two slow calls at once served with Redis answering", func() bool {
		o := parallel(e, 2, chatBody("gpt-test", "hi", false), g.Key)
		g.Root.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
		return o.status[http.StatusOK] == 2 && !st.RedisDown
	})
	// Long enough that none ends before all three are admitted, however
	// loaded the machine.
	up.SetBehavior(fakeupstream.Behavior{Delay: 3 * time.Second})
	o := parallel(e, 3, chatBody("gpt-test", "hi", false), g.Key)
	if o.status[http.StatusOK] != 2 || o.status[http.StatusTooManyRequests] != 1 {
		t.Fatalf("three slow calls at once: %v, want 2 served and 1 refused", o.status)
	}
	if got := decodeV1Error(t, o.refusal); got.Error.Message != "令牌并发请求数限制 2 已达到" {
		t.Errorf("refusal %+v", got.Error)
	}
	if g.Root.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st); st.RedisDown {
		t.Error("Redis counted down after the calls")
	}
}

// TestRateLimitFleet: two gateways sharing one PostgreSQL and one Redis
// enforce one limit together.
func TestRateLimitFleet(t *testing.T) {
	apptest.Parallel(t)
	redisURL := os.Getenv("MODELGATE_TEST_REDIS")
	var pg *storetest.Engine
	for _, en := range storetest.Engines() {
		if en.Name == "postgres" {
			pg = &en
		}
	}
	if redisURL == "" || pg == nil {
		t.Skip("needs MODELGATE_TEST_POSTGRES_DSN and MODELGATE_TEST_REDIS")
	}
	e1, up, g, _ := limitGateway(t, "SQL_DSN", pg.FreshDSN(t))
	cfg := e1.Config
	cfg.DataDir = t.TempDir()
	e2 := apptest.Start(t, cfg)
	e2.App.SetClock(func() time.Time { return windowStart })
	setKeyLimits(t, g, 10, 0, 0)

	var wg sync.WaitGroup
	var o1, o2 *outcome
	wg.Go(func() { o1 = parallel(e1, 100, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Go(func() { o2 = parallel(e2, 100, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Wait()
	if served := o1.status[http.StatusOK] + o2.status[http.StatusOK]; served != 10 || up.Count() != 10 {
		t.Fatalf("served %d (%v, %v), upstream %d: want 10 over both nodes", served, o1.status, o2.status, up.Count())
	}

	// Concurrency across the fleet.
	setKeyLimits(t, g, 0, 0, 2)
	up.SetBehavior(fakeupstream.Behavior{Delay: 3 * time.Second})
	wg.Go(func() { o1 = parallel(e1, 30, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Go(func() { o2 = parallel(e2, 30, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Wait()
	if served := o1.status[http.StatusOK] + o2.status[http.StatusOK]; served != 2 {
		t.Fatalf("concurrency: served %d (%v, %v), want 2", served, o1.status, o2.status)
	}
}

// TestRateLimitCluster: in a two-node multi-active cluster each node
// enforces ceil(limit/2), so the cluster serves at most the limit plus the
// documented slack (nodes − 1): 12 of an RPM of 11.
func TestRateLimitCluster(t *testing.T) {
	nodes := apptest.NewCluster(t, 2)
	up := fakeupstream.New(t)
	g := nodes[0].NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Quota: 1_000_000_000})
	clock := apptest.NewClock(windowStart)
	for _, n := range nodes {
		n.App.SetClock(clock.Now)
	}
	setKeyLimits(t, g, 11, 0, 0)
	// The key with its limits, the routes and the balance reach node 2,
	// and each node counts two nodes.
	hash := token.HashKey(g.Key)
	apptest.Eventually(t, "the key's limits and a served call on node 2", func() bool {
		var st struct {
			Nodes int64 `json:"nodes"`
		}
		nodes[1].Root().OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
		tok, err := nodes[1].App.Store.TokenByKeyHash(context.Background(), hash)
		return st.Nodes == 2 && err == nil && tok.RPMLimit == 11 &&
			nodes[1].Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)).Status == http.StatusOK
	})
	clock.Advance(time.Minute) // a fresh window: the probes above counted in the last one
	var wg sync.WaitGroup
	var o1, o2 *outcome
	wg.Go(func() { o1 = parallel(nodes[0], 60, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Go(func() { o2 = parallel(nodes[1], 60, chatBody("gpt-test", "hi", false), g.Key) })
	wg.Wait()
	if served := o1.status[http.StatusOK] + o2.status[http.StatusOK]; o1.status[http.StatusOK] != 6 || o2.status[http.StatusOK] != 6 || served > 11+1 {
		t.Fatalf("served %v on node 1, %v on node 2: want 6 each (limit 11 + slack 1)", o1.status, o2.status)
	}
	if got := decodeV1Error(t, o2.refusal); got.Error.Message != "令牌每分钟请求数限制 6 已达到" {
		t.Errorf("node 2 refusal %+v: names the node's share", got.Error)
	}
}

// bytesReader is a request body.
func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
