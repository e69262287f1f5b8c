package relay_test

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// The upstream sees the channel's key and none of the caller's credentials,
// cookies or hop-by-hop headers, whatever the two dialects.
func TestUpstreamGetsChannelKeyOnly(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	oa := fakeupstream.New(t, fakeupstream.WithKey("openai-channel-key"))
	an := fakeupstream.New(t, fakeupstream.WithKey("anthropic-channel-key"))
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: oa.URL, UpstreamKey: "openai-channel-key"})
	g.Root.OK("POST", "/api/channel/", map[string]any{"type": 14, "name": "claude", "key": "anthropic-channel-key",
		"base_url": an.URL, "models": "claude-test", "group": "default"})
	g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "claude-test", "input_price": 2, "output_price": 8})
	secret := strings.TrimPrefix(g.Key, "sk-")

	client := []string{
		"Cookie", "session=caller-cookie",
		"Connection", "keep-alive, X-Hop-Secret",
		"X-Hop-Secret", "hop-value",
		"Keep-Alive", "timeout=5",
		"Proxy-Authorization", "Basic caller-proxy",
		"Te", "trailers",
		"X-Forwarded-For", "203.0.113.9",
	}
	calls := []struct {
		path string
		body map[string]any
		auth []string
	}{
		{"/v1/chat/completions", authChat("gpt-test"), []string{"Authorization", "Bearer " + g.Key}},
		{"/v1/chat/completions", authChat("claude-test"), []string{"Authorization", "Bearer " + g.Key}},
		{"/v1/messages", map[string]any{"model": "claude-test", "max_tokens": 16, "messages": []map[string]string{{"role": "user", "content": "hi"}}},
			[]string{"x-api-key", g.Key, "anthropic-version", "2023-06-01"}},
		{"/v1/messages", map[string]any{"model": "gpt-test", "max_tokens": 16, "messages": []map[string]string{{"role": "user", "content": "hi"}}},
			[]string{"x-api-key", g.Key, "anthropic-version", "2023-06-01"}},
	}
	for _, c := range calls {
		if r := e.Call("", "POST", c.path, c.body, append(slices.Clone(client), c.auth...)...); r.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", c.path, c.body["model"], r.Status, r.Body)
		}
	}
	requests := append(oa.Requests(), an.Requests()...)
	if len(requests) != 4 {
		t.Fatalf("upstreams got %d requests, want 4", len(requests))
	}
	for _, req := range requests {
		switch req.Dialect {
		case fakeupstream.OpenAI:
			if req.Key != "openai-channel-key" || req.Header.Get("x-api-key") != "" {
				t.Errorf("openai upstream got key %q, x-api-key %q", req.Key, req.Header.Get("x-api-key"))
			}
		case fakeupstream.Anthropic:
			if req.Key != "anthropic-channel-key" || req.Header.Get("Authorization") != "" {
				t.Errorf("anthropic upstream got key %q, Authorization %q", req.Key, req.Header.Get("Authorization"))
			}
		}
		for name, values := range req.Header {
			for _, v := range values {
				if strings.Contains(v, secret) || strings.Contains(v, "caller") || strings.Contains(v, "hop-value") {
					t.Errorf("%s upstream got the caller's %s: %q", req.Dialect, name, v)
				}
			}
		}
		for _, name := range []string{"Cookie", "X-Hop-Secret", "Keep-Alive", "Proxy-Authorization", "Te", "X-Forwarded-For"} {
			if v := req.Header.Get(name); v != "" {
				t.Errorf("%s upstream got %s: %q", req.Dialect, name, v)
			}
		}
	}
}

func TestRequestID(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})

	sent := e.Call(g.Key, "POST", "/v1/chat/completions", authChat("gpt-test"), "X-Request-Id", "client-chosen-id-1", "Accept", "application/json; q=0.9")
	if sent.Status != http.StatusOK || sent.Header.Get("X-Request-Id") != "client-chosen-id-1" {
		t.Fatalf("sent id: %d, X-Request-Id %q", sent.Status, sent.Header.Get("X-Request-Id"))
	}
	// The id, the client's Accept and the body's type reach the upstream
	// (their values are the call's, shared with its answer: upstream.go).
	h := up.LastRequest().Header
	if got := h.Get("X-Request-Id"); got != "client-chosen-id-1" {
		t.Fatalf("upstream got X-Request-Id %q", got)
	}
	if h.Get("Accept") != "application/json; q=0.9" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("upstream got Accept %q, Content-Type %q", h.Get("Accept"), h.Get("Content-Type"))
	}
	if got := sent.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Fatalf("answer's X-Content-Type-Options %q", got)
	}
	gen := e.Call(g.Key, "POST", "/v1/chat/completions", authChat("gpt-test"))
	id := gen.Header.Get("X-Request-Id")
	if gen.Status != http.StatusOK || len(id) < 16 || id == "client-chosen-id-1" {
		t.Fatalf("generated id: %d, X-Request-Id %q", gen.Status, id)
	}
	again := e.Call(g.Key, "POST", "/v1/chat/completions", authChat("gpt-test")).Header.Get("X-Request-Id")
	if again == id {
		t.Fatalf("two calls got the same generated id %q", id)
	}
	// Refusals carry an id too, for support requests.
	if r := e.Call("", "POST", "/v1/chat/completions", authChat("gpt-test")); r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("a 401 has no X-Request-Id")
	}

	e.SettleAll()
	var logs []struct {
		RequestID string `json:"request_id"`
	}
	g.Root.OK("GET", "/api/log/?type=2", nil).Decode(t, &logs)
	var ids []string
	for _, l := range logs {
		ids = append(ids, l.RequestID)
	}
	slices.Sort(ids)
	want := []string{"client-chosen-id-1", id, again}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("consume logs have request ids %q, want %q", ids, want)
	}
}

// v1Models lists what /v1/models shows to key.
func v1Models(t *testing.T, e *apptest.Env, key string) []string {
	t.Helper()
	r := e.Call(key, "GET", "/v1/models", nil)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	r.JSON(t, &list)
	if r.Status != http.StatusOK || list.Object != "list" {
		t.Fatalf("/v1/models: %d %s", r.Status, r.Body)
	}
	ids := []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestModelsEndpoints(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "more", "key": fakeupstream.DefaultKey, "base_url": up.URL,
		"models": "alpha,beta,unpriced", "group": "default"})
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "vip", "key": fakeupstream.DefaultKey, "base_url": up.URL,
		"models": "vip-model,alpha", "group": "vip"})
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "off", "key": fakeupstream.DefaultKey, "base_url": up.URL,
		"models": "disabled-model", "group": "default", "status": 2})
	// Only priced models are listed: a call of "unpriced" is refused 404.
	for _, m := range []string{"alpha", "beta", "vip-model", "disabled-model"} {
		g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": m, "input_price": 1, "output_price": 1})
	}

	if got, want := v1Models(t, e, g.Key), []string{"alpha", "beta", "gpt-test"}; !slices.Equal(got, want) {
		t.Fatalf("default user sees %q, want %q", got, want)
	}
	narrow := g.User.CreateToken(map[string]any{"name": "narrow", "unlimited_quota": true, "models": "beta,vip-model"})
	if got, want := v1Models(t, e, narrow.Key), []string{"beta"}; !slices.Equal(got, want) {
		t.Fatalf("allow list beta,vip-model sees %q, want %q", got, want)
	}
	g.User.OK("PUT", "/api/token/", map[string]any{"id": narrow.ID, "models": "alpha"})
	if got, want := v1Models(t, e, narrow.Key), []string{"alpha"}; !slices.Equal(got, want) {
		t.Fatalf("after the allow list changed to alpha: %q, want %q", got, want)
	}

	r := e.Call(g.Key, "GET", "/v1/models/beta", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"id":"beta"`) {
		t.Fatalf("/v1/models/beta: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct{ key, model string }{
		{g.Key, "vip-model"}, {g.Key, "disabled-model"}, {g.Key, "nonexistent"}, {narrow.Key, "beta"}, {g.Key, "unpriced"},
	} {
		authWantError(t, e.Call(c.key, "GET", "/v1/models/"+c.model, nil), http.StatusNotFound,
			"The model '"+c.model+"' does not exist or you do not have access to it.")
	}

	_, vipID := e.NewUser("vipuser", 1)
	g.Root.OK("PUT", "/api/user/", map[string]any{"id": vipID, "group": "vip"})
	vip := e.Client()
	vip.Login("vipuser", "password-vipuser")
	vipKey := vip.CreateToken(map[string]any{"name": "vip", "unlimited_quota": true}).Key
	if got, want := v1Models(t, e, vipKey), []string{"alpha", "vip-model"}; !slices.Equal(got, want) {
		t.Fatalf("vip user sees %q, want %q", got, want)
	}
	// A group change applies to the user's cached keys at once.
	g.Root.OK("PUT", "/api/user/", map[string]any{"id": g.UserID, "group": "vip"})
	if got, want := v1Models(t, e, g.Key), []string{"alpha", "vip-model"}; !slices.Equal(got, want) {
		t.Fatalf("after moving to vip the user sees %q, want %q", got, want)
	}
	if up.Count() != 0 {
		t.Fatalf("model listing reached the upstream %d times", up.Count())
	}
}

func TestNoChannelOrNoPrice(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)

	// Priced, but no channel of the user's group serves it.
	g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "orphan", "input_price": 1, "output_price": 1})
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "vip", "key": fakeupstream.DefaultKey, "base_url": up.URL,
		"models": "orphan", "group": "vip"})
	r := e.Call(g.Key, "POST", "/v1/chat/completions", authChat("orphan"))
	authWantError(t, r, http.StatusNotFound, "分组 default 下模型 orphan 无可用渠道")

	// Served, but without a price.
	g.Root.OK("POST", "/api/channel/", map[string]any{"name": "free", "key": fakeupstream.DefaultKey, "base_url": up.URL,
		"models": "unpriced", "group": "default"})
	r = e.Call(g.Key, "POST", "/v1/chat/completions", authChat("unpriced"))
	authWantError(t, r, http.StatusNotFound, "模型 unpriced 未设置价格,暂不可用")

	if up.Count() != 0 {
		t.Fatalf("refused calls reached the upstream %d times", up.Count())
	}
	if after := g.Quota(g.UserID); after != before {
		t.Fatalf("refused calls changed the balance: %d → %d", before, after)
	}
}

func TestBadInput(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.Root.OK("PUT", "/api/option/", map[string]any{"key": "RelayMaxBodyMB", "value": "1"})
	before := g.Quota(g.UserID)

	big := append([]byte(`{"model":"gpt-test","messages":[{"role":"user","content":"`), bytes.Repeat([]byte("x"), 2<<20)...)
	big = append(big, `"}]}`...)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		msg                string
	}{
		{"malformed JSON", "POST", "/v1/chat/completions", `{"model":"gpt-test",`, 400, "请求体不是有效的 JSON"},
		{"not an object", "POST", "/v1/chat/completions", `[1,2]`, 400, "请求体不是有效的 JSON"},
		{"empty body", "POST", "/v1/chat/completions", ``, 400, "请求体不是有效的 JSON"},
		{"missing model", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "缺少 model 参数"},
		{"blank model", "POST", "/v1/embeddings", `{"model":"  ","input":"x"}`, 400, "缺少 model 参数"},
		{"over the limit", "POST", "/v1/chat/completions", big, 413, "请求体过大"},
		{"unknown path", "POST", "/v1/nonexistent", authChat("gpt-test"), 404, "Unknown request URL: POST /v1/nonexistent"},
		{"wrong method", "GET", "/v1/chat/completions", nil, 405, "请求方法 GET 不适用于 /v1/chat/completions,允许: POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authWantError(t, e.Call(g.Key, tt.method, tt.path, tt.body), tt.status, tt.msg)
		})
	}
	// The limit is on the bytes read, not on a declared length.
	r := chunkedCall(t, e, g.Key, big)
	authWantError(t, r, http.StatusRequestEntityTooLarge, "请求体过大")

	if up.Count() != 0 {
		t.Fatalf("bad input reached the upstream %d times", up.Count())
	}
	if after := g.Quota(g.UserID); after != before {
		t.Fatalf("bad input changed the balance: %d → %d", before, after)
	}
	authOK(t, e, g.Key) // the limit leaves normal calls alone
}

// chunkedCall sends body without a Content-Length.
func chunkedCall(t *testing.T, e *apptest.Env, key string, body []byte) *apptest.V1 {
	t.Helper()
	req, err := http.NewRequest("POST", e.Server.URL+"/v1/chat/completions", struct{ *bytes.Reader }{bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return &apptest.V1{Status: resp.StatusCode, Header: resp.Header, Body: out.Bytes()}
}
