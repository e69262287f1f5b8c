package relay_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
)

// setOutputLimit sets the model price's max_output_tokens through the API
// and checks the price shows it.
func setOutputLimit(t *testing.T, g *apptest.Gateway, model string, n int64) {
	t.Helper()
	var p struct {
		MaxOutputTokens int64 `json:"max_output_tokens"`
	}
	g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": g.ModelPriceID(t, model), "max_output_tokens": n}).Decode(t, &p)
	if p.MaxOutputTokens != n {
		t.Fatalf("price shows max_output_tokens %d, want %d", p.MaxOutputTokens, n)
	}
}

// A model with its own output limit: an OpenAI-dialect call without a
// completion limit reaches the upstream byte for byte (no 16,384 injected)
// when the balance covers the model's limit; a call with its own limit
// within the model's does too; a small balance is still capped at what its
// hold buys, above the global default since the hold is for the model's
// limit.
func TestModelOutputLimitOpenAIDialect(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	setOutputLimit(t, g, "gpt-test", 64000)
	chat := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"seed":7}`
	for _, tc := range []struct{ path, sent string }{
		{"/v1/chat/completions", chat},
		{"/v1/chat/completions", strings.Replace(chat, `"seed":7`, `"stream":true,"stream_options":{"include_usage":true}`, 1)},
		{"/v1/chat/completions", strings.Replace(chat, `"seed":7`, `"max_tokens":50`, 1)},
		{"/v1/chat/completions", strings.Replace(chat, `"seed":7`, `"max_completion_tokens":64000`, 1)},
		{"/v1/responses", `{"model":"gpt-test","input":"hi", "store":false}`},
	} {
		if r := e.Call(g.Key, "POST", tc.path, tc.sent); r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.sent, r.Status, r.Body)
		}
		if got := string(up.LastRequest().Body); got != tc.sent {
			t.Errorf("upstream body\n got %s\nwant %s (unchanged)", got, tc.sent)
		}
	}

	// A balance worth about 37,500 output tokens: more than the global
	// default, less than the model's limit. Strict billing caps the call
	// at what the hold buys.
	g.SetQuota(300_000)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("small balance: %d %s", r.Status, r.Body)
	}
	sent := up.LastRequest().Body
	if lim := field(t, sent, "max_tokens"); lim <= 16384 || lim >= 64000 {
		t.Fatalf("small balance: upstream got max_tokens %d, want the hold's cap between 16384 and 64000: %s", lim, sent)
	}

	// A model without a value keeps the global default.
	g.SetQuota(10_000_000)
	setOutputLimit(t, g, "gpt-test", 0)
	e.Call(g.Key, "POST", "/v1/chat/completions", chat)
	if lim := field(t, up.LastRequest().Body, "max_tokens"); lim != 16384 {
		t.Fatalf("a model without a limit: max_tokens %d, want 16384", lim)
	}
}

// Where the upstream needs a limit (Anthropic's max_tokens) it gets
// exactly the model's value, natively and converted, with strict billing
// and with overruns allowed.
func TestModelOutputLimitAnthropicGetsExactlyIt(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: channel.TypeAnthropic})
	setOutputLimit(t, g, "gpt-test", 32000)
	for _, overrun := range []string{"false", "true"} {
		g.SetOption("BillingOverrunAllowed", overrun)
		for _, tc := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/messages", messagesBody("hi", false)},
			{"/v1/messages", messagesBody("hi", true)},
			{"/v1/chat/completions", chatBody("gpt-test", "hi", false)},
			{"/v1/chat/completions", chatBody("gpt-test", "hi", true)},
		} {
			if r := e.Call(g.Key, "POST", tc.path, tc.body); r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.path, r.Status, r.Body)
			}
			if lim := field(t, up.LastRequest().Body, "max_tokens"); lim != 32000 {
				t.Errorf("overrun %s, %s: upstream max_tokens %d, want the model's 32000", overrun, tc.path, lim)
			}
		}
	}
	// Claude Code's own limit reaches the upstream unchanged.
	sent := `{"model":"gpt-test","max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`
	if r := e.Call(g.Key, "POST", "/v1/messages", sent); r.Status != http.StatusOK {
		t.Fatalf("own limit: %d %s", r.Status, r.Body)
	}
	if got := string(up.LastRequest().Body); got != sent {
		t.Errorf("upstream body %s, want %s", got, sent)
	}
}

// max_output_tokens is validated: an integer from 0 to 10,000,000; a bad
// value is refused and changes nothing.
func TestModelPriceOutputLimitValidation(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	id := g.ModelPriceID(t, "gpt-test")
	setOutputLimit(t, g, "gpt-test", 128000)
	for _, bad := range []string{"-1", "10000001", "9223372036854775808", "1.5", `"64000"`} {
		r := g.Root.Do("PUT", "/api/model_price/", `{"id":`+itoa(id)+`,"max_output_tokens":`+bad+`}`)
		if r.Success {
			t.Errorf("max_output_tokens %s accepted", bad)
		}
		r = g.Root.Do("POST", "/api/model_price/", `{"model_name":"other","input_price":1,"max_output_tokens":`+bad+`}`)
		if r.Success {
			t.Errorf("create with max_output_tokens %s accepted", bad)
		}
	}
	var p struct {
		MaxOutputTokens int64 `json:"max_output_tokens"`
	}
	g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": "other", "input_price": 1, "max_output_tokens": 10_000_000}).Decode(t, &p)
	if p.MaxOutputTokens != 10_000_000 {
		t.Fatalf("created with %d", p.MaxOutputTokens)
	}
	var list []struct {
		ModelName       string `json:"model_name"`
		MaxOutputTokens int64  `json:"max_output_tokens"`
	}
	g.Root.OK("GET", "/api/model_price/?page_size=100", nil).Decode(t, &list)
	for _, l := range list {
		if l.ModelName == "gpt-test" && l.MaxOutputTokens != 128000 {
			t.Fatalf("a refused update changed the limit: %d", l.MaxOutputTokens)
		}
	}
}

// On a plan the same: an open call is held for the model's output limit;
// a window that covers it leaves the body unchanged, a window that leaves
// less caps the call at what it holds.
func TestModelOutputLimitOnAPlan(t *testing.T) {
	apptest.Parallel(t)
	e, up, g := planGateway(t)
	setOutputLimit(t, g, "gpt-test", 5000)
	g.Subscribe(g.UserID, g.NewPlan("p", apptest.PlanLimits{"gpt-test": {"token_period": 8000}}, nil), 30)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 10, CompletionTokens: 4000, HonourLimit: true})
	chat := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	if got := string(up.LastRequest().Body); got != chat {
		t.Fatalf("a window covering the model's limit: upstream body %s, want it unchanged", got)
	}
	// 4,010 of 8,000 used: the window leaves less than 5,000.
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("second: %d %s", r.Status, r.Body)
	}
	if lim := field(t, up.LastRequest().Body, "max_tokens"); lim <= 0 || lim >= 5000 {
		t.Fatalf("a window short of the model's limit: max_tokens %d, want a cap below 5000", lim)
	}
}
