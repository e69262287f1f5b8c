package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
)

// v1Error is the OpenAI error body of a refused /v1 call.
type v1Error struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

func decodeV1Error(t *testing.T, r *apptest.V1) v1Error {
	t.Helper()
	var e v1Error
	r.JSON(t, &e)
	return e
}

func TestBillingInsufficientBalance(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetQuota(0)

	for _, stream := range []bool{false, true} {
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", stream))
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("stream %v: %d %s, want 429", stream, r.Status, r.Body)
		}
		if got := decodeV1Error(t, r); got.Error.Code != "insufficient_quota" || got.Error.Message != relay.MsgUserQuota {
			t.Errorf("error %+v, want code insufficient_quota, message %q", got.Error, relay.MsgUserQuota)
		}
	}
	if n := up.Count(); n != 0 {
		t.Errorf("upstream called %d times without a reservation", n)
	}
	if a := g.Accounts(); a.Quota != 0 || a.UserUsed != 0 || len(g.ConsumeLogs()) != 0 {
		t.Errorf("refused calls moved money: %+v", a)
	}

	// A balance below the price of one call is refused by strict billing;
	// with BillingOverrunAllowed it is still usable, once: the reservation
	// takes what there is and the call settles at its cost.
	g.SetQuota(10)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("low balance, strict: %d %s, want 429", r.Status, r.Body)
	}
	g.SetOption("BillingOverrunAllowed", "true")
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusOK {
		t.Fatalf("low balance: %d %s", r.Status, r.Body)
	}
	if q := g.Quota(g.UserID); q != 10-88 {
		t.Errorf("balance %d after a call of 88 from 10", q)
	}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("negative balance: %d %s, want 429", r.Status, r.Body)
	}
	if n := up.Count(); n != 1 {
		t.Errorf("upstream called %d times, want 1", n)
	}
}

func TestBillingLimitedKeyExhausts(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetOption("BillingOverrunAllowed", "true") // the overrun exhausts the key; strict: TestStrictBilling*
	key := g.User.CreateToken(map[string]any{"name": "limited", "remain_quota": 100, "unlimited_quota": false})
	token := func() apptest.TokenInfo {
		e.SettleAll()
		var tok apptest.TokenInfo
		g.User.OK("GET", apptest.Path("/api/token/%d", key.ID), nil).Decode(t, &tok)
		return tok
	}
	// 100 covers one call of 88; the second is let through on the 12 left
	// and overruns to -76, which exhausts the key.
	for i, want := range []apptest.TokenInfo{{RemainQuota: 12, UsedQuota: 88, Status: 1}, {RemainQuota: -76, UsedQuota: 176, Status: 4}} {
		if r := e.Call(key.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", i == 1)); r.Status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i+1, r.Status, r.Body)
		}
		if got := token(); got.RemainQuota != want.RemainQuota || got.UsedQuota != want.UsedQuota || got.Status != want.Status {
			t.Errorf("after call %d: key remain %d used %d status %d, want %d %d %d", i+1,
				got.RemainQuota, got.UsedQuota, got.Status, want.RemainQuota, want.UsedQuota, want.Status)
		}
	}
	r := e.Call(key.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusTooManyRequests || decodeV1Error(t, r).Error.Message != relay.MsgKeyExhausted {
		t.Errorf("exhausted key: %d %s, want 429 %q", r.Status, r.Body, relay.MsgKeyExhausted)
	}
	if n := up.Count(); n != 2 {
		t.Errorf("upstream called %d times, want 2", n)
	}
	// The user's balance paid the same as the key.
	if q := g.Quota(g.UserID); q != 10_000_000-176 {
		t.Errorf("balance %d, want %d", q, 10_000_000-176)
	}
}

// TestBillingUpstreamFailureReleases checks that a call no channel served
// costs nothing and holds nothing: the reservation is released.
func TestBillingUpstreamFailureReleases(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up, up2 := fakeupstream.New(t), fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("POST", "/api/channel/", map[string]any{"type": 1, "name": "second", "key": fakeupstream.DefaultKey,
		"base_url": up2.URL, "models": "gpt-test", "group": "default"})
	before := g.Accounts()
	for _, tc := range []struct {
		status, want int
		stream       bool
	}{{500, 502, false}, {500, 502, true}, {400, 400, false}} {
		up.SetBehavior(fakeupstream.Behavior{Status: tc.status})
		up2.SetBehavior(fakeupstream.Behavior{Status: tc.status})
		calls := up.Count() + up2.Count()
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", tc.stream))
		if r.Status != tc.want {
			t.Fatalf("upstreams answering %d: %d %s, want %d", tc.status, r.Status, r.Body, tc.want)
		}
		if up.Count()+up2.Count() == calls {
			t.Fatalf("upstreams answering %d: not called", tc.status)
		}
		if after := g.Accounts(); after != before {
			t.Errorf("upstreams answering %d: accounts %+v, want unchanged %+v", tc.status, after, before)
		}
	}
	if logs := g.ConsumeLogs(); len(logs) != 0 {
		t.Errorf("consume logs of failed calls: %+v", logs)
	}
}

// TestBillingClientDisconnectMidStream checks that a client leaving a
// stream, with no grace for the upstream's usage (StreamDrainSeconds 0),
// cancels the upstream call and is billed once, for what the upstream
// produced, with nothing left held.
func TestBillingClientDisconnectMidStream(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	reply := "one two three four five six seven eight nine ten"
	up.SetBehavior(fakeupstream.Behavior{Reply: reply, Chunks: 10, ChunkDelay: 500 * time.Millisecond})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetOption("StreamDrainSeconds", "0")
	before := g.Accounts()

	body, _ := json.Marshal(chatBody("gpt-test", "count to ten", true))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := streamToFirstChunk(t, ctx, e.Server.URL, g.Key, body, "one")
	cancel()
	resp.Body.Close()
	// The whole stream would take 4.5 s more: the upstream call must end
	// well before, because the relay cancelled it.
	up.WaitOpen(t, 0, 2*time.Second)

	after := g.Accounts()
	logs := g.ConsumeLogs()
	if len(logs) != 1 {
		t.Fatalf("%d consume logs, want 1: %+v", len(logs), logs)
	}
	l := logs[0]
	if l.Quota <= 0 || !l.IsStream || l.CompletionTokens < 1 || l.CompletionTokens >= 10 {
		t.Errorf("log %+v: want a positive quota for part of the 10-token reply", l)
	}
	// No reservation is left: the balance fell by exactly the log's quota.
	if spent := before.Quota - after.Quota; spent != l.Quota || after.UserUsed-before.UserUsed != l.Quota ||
		after.TokenUsed-before.TokenUsed != l.Quota || after.ChannelUsed-before.ChannelUsed != l.Quota {
		t.Errorf("balance fell by %d, used grew user %d key %d channel %d; log quota %d", spent,
			after.UserUsed-before.UserUsed, after.TokenUsed-before.TokenUsed, after.ChannelUsed-before.ChannelUsed, l.Quota)
	}
	if n := up.Count(); n != 1 {
		t.Errorf("upstream called %d times, want 1", n)
	}
}

// TestBillingModelWithoutPrice checks that a model with a channel but no
// enabled price is refused before anything is forwarded: never served free.
func TestBillingModelWithoutPrice(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "models": "gpt-test,gpt-unpriced"})
	g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": g.ModelPriceID(t, "gpt-test"), "enabled": false})
	for _, model := range []string{"gpt-unpriced", "gpt-test"} {
		r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody(model, "hi", false))
		got := decodeV1Error(t, r)
		if r.Status != http.StatusNotFound || got.Error.Code != "model_not_found" || !strings.Contains(got.Error.Message, model) {
			t.Errorf("%s: %d %s, want 404 model_not_found naming the model", model, r.Status, r.Body)
		}
	}
	if n := up.Count(); n != 0 {
		t.Errorf("upstream called %d times for unpriced models", n)
	}
	if a := g.Accounts(); a.Quota != 10_000_000 || a.UserUsed != 0 {
		t.Errorf("accounts %+v after refused calls", a)
	}
}

// streamToFirstChunk starts a streamed call at base with key and reads its
// answer up to the first chunk whose content starts with first; the caller
// cuts it by cancelling ctx and closing the body.
func streamToFirstChunk(t *testing.T, ctx context.Context, base, key string, body []byte, first string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first chunk: %v", err)
		}
		if strings.HasPrefix(line, "data: {") && strings.Contains(line, `"content":"`+first) {
			return resp
		}
	}
}
