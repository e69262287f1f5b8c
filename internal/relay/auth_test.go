package relay_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
	"github.com/modelgate/modelgate/internal/store"
)

// authChat is a minimal chat call of model.
func authChat(model string) map[string]any {
	return map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
}

// authWantError fails t unless r is an OpenAI-shaped error with status and
// exactly msg.
func authWantError(t *testing.T, r *apptest.V1, status int, msg string) {
	t.Helper()
	var body struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	err := json.Unmarshal(r.Body, &body)
	if r.Status != status || err != nil || body.Error == nil || body.Error.Message != msg || body.Error.Type == "" || body.Error.Code == nil {
		t.Fatalf("want %d %q in the OpenAI error shape, got %d %s", status, msg, r.Status, r.Body)
	}
}

// authOK fails t unless the call with key succeeded.
func authOK(t *testing.T, e *apptest.Env, key string) {
	t.Helper()
	if r := e.Call(key, "POST", "/v1/chat/completions", authChat("gpt-test")); r.Status != http.StatusOK {
		t.Fatalf("want 200, got %d %s", r.Status, r.Body)
	}
}

func TestKeyAuthFailures(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	secret := strings.TrimPrefix(g.Key, "sk-")
	unknown := "sk-" + strings.Repeat("A", 48)
	before := g.Quota(g.UserID)

	tests := []struct {
		name, header string
		msg          string
	}{
		{"missing", "", relay.MsgNoKey},
		{"bearer only", "Bearer ", relay.MsgNoKey},
		{"sk- only", "Bearer sk-", relay.MsgNoKey},
		{"too short", "Bearer sk-abc", relay.MsgInvalidKey},
		{"bad character", "Bearer sk-" + secret[:47] + "_", relay.MsgInvalidKey},
		{"unknown", "Bearer " + unknown, relay.MsgInvalidKey},
		{"channel not a number", "Bearer " + g.Key + "-abc", relay.MsgInvalidKey},
		{"channel zero", "Bearer " + g.Key + "-0", relay.MsgInvalidKey},
		{"another scheme", "Basic " + g.Key, relay.MsgInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h []string
			if tt.header != "" {
				h = []string{"Authorization", tt.header}
			}
			r := e.Call("", "POST", "/v1/chat/completions", authChat("gpt-test"), h...)
			authWantError(t, r, http.StatusUnauthorized, tt.msg)
			r = e.Call("", "GET", "/v1/models", nil, h...)
			authWantError(t, r, http.StatusUnauthorized, tt.msg)
		})
	}
	if n := up.Count(); n != 0 {
		t.Fatalf("refused calls reached the upstream %d times", n)
	}
	if after := g.Quota(g.UserID); after != before {
		t.Fatalf("refused calls changed the balance: %d → %d", before, after)
	}

	// Spec step 1: Bearer and sk- are both optional prefixes.
	for _, h := range []string{"Bearer " + secret, g.Key, secret, "bearer " + g.Key} {
		if r := e.Call("", "POST", "/v1/chat/completions", authChat("gpt-test"), "Authorization", h); r.Status != http.StatusOK {
			t.Fatalf("Authorization %q: %d %s", h, r.Status, r.Body)
		}
	}
}

func TestKeyStatusRefusedAtOnce(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	tok := g.User.CreateToken(map[string]any{"name": "status", "unlimited_quota": true})
	authOK(t, e, tok.Key) // the key is cached from here on

	g.User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": tok.ID, "status": 2})
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusUnauthorized, relay.MsgKeyDisabled)
	g.User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": tok.ID, "status": 1})
	authOK(t, e, tok.Key)

	past := time.Now().Add(-time.Minute).Unix()
	e.SetToken(g.UserID, tok.ID, store.TokenPatch{ExpiredTime: &past})
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusUnauthorized, relay.MsgKeyExpired)
	never := int64(-1)
	e.SetToken(g.UserID, tok.ID, store.TokenPatch{ExpiredTime: &never})
	authOK(t, e, tok.Key)

	exhausted := 4
	e.SetToken(g.UserID, tok.ID, store.TokenPatch{Status: &exhausted})
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusTooManyRequests, relay.MsgKeyExhausted)
	authWantError(t, e.Call(tok.Key, "GET", "/v1/models", nil), http.StatusTooManyRequests, relay.MsgKeyExhausted)

	g.User.OK("DELETE", apptest.Path("/api/token/%d", tok.ID), nil)
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusUnauthorized, relay.MsgInvalidKey)
	if n := up.Count(); n != 3 {
		t.Fatalf("upstream got %d calls, want the 3 allowed ones", n)
	}
}

// A key that expires while cached is refused when its time passes, with no
// change to the row: expiry is judged per request, not per load.
func TestKeyExpiresWhileCached(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	soon := time.Now().Unix() + 2
	tok := g.User.CreateToken(map[string]any{"name": "soon", "unlimited_quota": true, "expired_time": soon})
	authOK(t, e, tok.Key)
	time.Sleep(time.Until(time.Unix(soon+1, 0)))
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusUnauthorized, relay.MsgKeyExpired)
}

func TestBannedUserKeysStopAtOnce(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	authOK(t, e, g.Key)

	g.Root.OK("POST", "/api/user/manage", map[string]any{"username": "caller", "action": "disable"})
	authWantError(t, e.Call(g.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusForbidden, relay.MsgUserBanned)
	authWantError(t, e.Call(g.Key, "GET", "/v1/models", nil), http.StatusForbidden, relay.MsgUserBanned)

	g.Root.OK("POST", "/api/user/manage", map[string]any{"username": "caller", "action": "enable"})
	authOK(t, e, g.Key)
	if n := up.Count(); n != 2 {
		t.Fatalf("upstream got %d calls, want 2", n)
	}
}

func TestKeySubnet(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	local := g.User.CreateToken(map[string]any{"name": "local", "unlimited_quota": true, "subnet": "127.0.0.0/8"})
	authOK(t, e, local.Key)

	far := g.User.CreateToken(map[string]any{"name": "far", "unlimited_quota": true, "subnet": "10.0.0.0/8, 192.168.0.0/16"})
	want := "该令牌只能在指定网段使用:10.0.0.0/8,192.168.0.0/16,当前 ip:127.0.0.1"
	authWantError(t, e.Call(far.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusForbidden, want)
	authWantError(t, e.Call(far.Key, "GET", "/v1/models", nil), http.StatusForbidden, want)

	// The restriction follows an edit at once.
	g.User.OK("PUT", "/api/token/", map[string]any{"id": far.ID, "subnet": "127.0.0.1"})
	authOK(t, e, far.Key)
	g.User.OK("PUT", "/api/token/", map[string]any{"id": far.ID, "subnet": "10.0.0.0/8"})
	authWantError(t, e.Call(far.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusForbidden,
		"该令牌只能在指定网段使用:10.0.0.0/8,当前 ip:127.0.0.1")
	if n := up.Count(); n != 2 {
		t.Fatalf("upstream got %d calls, want 2", n)
	}
}

func TestKeyModelAllowList(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	tok := g.User.CreateToken(map[string]any{"name": "models", "unlimited_quota": true, "models": "gpt-test,other"})
	authOK(t, e, tok.Key)

	g.User.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "models": "other"})
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusForbidden, "该令牌无权使用模型:gpt-test")
	g.User.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "models": ""})
	authOK(t, e, tok.Key)
	if n := up.Count(); n != 2 {
		t.Fatalf("upstream got %d calls, want 2", n)
	}
}

// authFundedKey gives user id a balance and returns a key created by c.
func authFundedKey(g *apptest.Gateway, c *apptest.Client, id int64) string {
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 10_000_000})
	return c.CreateToken(map[string]any{"name": "pin", "unlimited_quota": true}).Key
}

func TestChannelPinning(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	low, high := fakeupstream.New(t), fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: low.URL}) // priority 0
	var ch struct {
		ID int64 `json:"id"`
	}
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "high", "key": fakeupstream.DefaultKey, "base_url": high.URL,
		"models": "gpt-test", "group": "default", "priority": 10}).Decode(t, &ch)
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "elsewhere", "key": fakeupstream.DefaultKey, "base_url": high.URL,
		"models": "other-model", "group": "default"})

	// Unpinned, the higher priority wins.
	authOK(t, e, g.Key)
	if low.Count() != 0 || high.Count() != 1 {
		t.Fatalf("unpinned call: low %d, high %d; want 0, 1", low.Count(), high.Count())
	}

	admin, adminID := e.NewUser("admin1", 10)
	var root apptest.UserInfo
	g.Root.OK("GET", "/api/user/self", nil).Decode(t, &root)
	for _, key := range []string{authFundedKey(g, admin, adminID), authFundedKey(g, g.Root, root.ID)} {
		authOK(t, e, fmt.Sprintf("%s-%d", key, g.ChannelID))
	}
	if low.Count() != 2 || high.Count() != 1 {
		t.Fatalf("pinned calls: low %d, high %d; want 2, 1", low.Count(), high.Count())
	}

	// A normal user may not pin, not even to the channel routing would pick.
	before := g.Quota(g.UserID)
	r := e.Call(fmt.Sprintf("%s-%d", g.Key, ch.ID), "POST", "/v1/chat/completions", authChat("gpt-test"))
	authWantError(t, r, http.StatusForbidden, relay.MsgPinNotAllowed)

	// Pinning to a channel that does not exist, or that does not serve the
	// model, is refused before anything is reserved or forwarded.
	adminKey := admin.CreateToken(map[string]any{"name": "pin2", "unlimited_quota": true}).Key
	adminBefore := g.Quota(adminID)
	for _, id := range []int64{ch.ID + 1000, ch.ID + 1} {
		r = e.Call(fmt.Sprintf("%s-%d", adminKey, id), "POST", "/v1/chat/completions", authChat("gpt-test"))
		authWantError(t, r, http.StatusBadRequest, fmt.Sprintf("指定的渠道 %d 不存在、未启用或不支持该模型", id))
	}
	if low.Count() != 2 || high.Count() != 1 {
		t.Fatalf("refused pins reached an upstream: low %d, high %d", low.Count(), high.Count())
	}
	if g.Quota(g.UserID) != before || g.Quota(adminID) != adminBefore {
		t.Fatal("refused pins changed a balance")
	}

	// A demoted admin loses pinning at once.
	g.Root.OK("POST", "/api/user/manage", map[string]any{"username": "admin1", "action": "demote"})
	r = e.Call(fmt.Sprintf("%s-%d", adminKey, g.ChannelID), "POST", "/v1/chat/completions", authChat("gpt-test"))
	authWantError(t, r, http.StatusForbidden, relay.MsgPinNotAllowed)
}

// Anthropic clients send their key in x-api-key on /v1/messages; errors
// come back in Anthropic's shape with the same messages.
func TestAnthropicClientKeyHeader(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	msg := map[string]any{"model": "gpt-test", "max_tokens": 64, "messages": []map[string]string{{"role": "user", "content": "hi"}}}

	r := e.Call("", "POST", "/v1/messages", msg, "x-api-key", g.Key, "anthropic-version", "2023-06-01")
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"type":"message"`) {
		t.Fatalf("x-api-key call: %d %s", r.Status, r.Body)
	}
	if got := up.LastRequest().Header.Get("Authorization"); got != "Bearer "+fakeupstream.DefaultKey {
		t.Fatalf("upstream got Authorization %q", got)
	}

	r = e.Call("", "POST", "/v1/messages", msg, "x-api-key", "sk-"+strings.Repeat("B", 48), "anthropic-version", "2023-06-01")
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	r.JSON(t, &body)
	if r.Status != http.StatusUnauthorized || body.Type != "error" || body.Error.Type != "authentication_error" || body.Error.Message != relay.MsgInvalidKey {
		t.Fatalf("unknown x-api-key: %d %s", r.Status, r.Body)
	}
	if n := up.Count(); n != 1 {
		t.Fatalf("upstream got %d calls, want 1", n)
	}
}

// A limited key that runs out through use is exhausted: the next call gets
// the same 429 as a key stored with status 4, although the cached row still
// says enabled (balances change without invalidating the key cache). A key
// created with no quota is exhausted from the start.
func TestKeyExhaustedByUse(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetOption("BillingOverrunAllowed", "true") // strict billing would refuse a call above the quota left
	tok := g.User.CreateToken(map[string]any{"name": "limited", "remain_quota": 50})
	authOK(t, e, tok.Key) // costs 88: the key ends below zero
	e.SettleAll()
	authWantError(t, e.Call(tok.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusTooManyRequests, relay.MsgKeyExhausted)

	empty := g.User.CreateToken(map[string]any{"name": "empty"})
	authWantError(t, e.Call(empty.Key, "POST", "/v1/chat/completions", authChat("gpt-test")), http.StatusTooManyRequests, relay.MsgKeyExhausted)
	if n := up.Count(); n != 1 {
		t.Fatalf("upstream got %d calls, want 1", n)
	}
}
