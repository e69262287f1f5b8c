package relay_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// upstreamHeaders are what real upstreams and the proxies in front of them
// add to their answers; only the rate-limit state and the upstream's
// request id may reach the client.
var upstreamHeaders = http.Header{
	"Openai-Organization":                    {"operator-org-1234"},
	"Openai-Project":                         {"proj_operator"},
	"Openai-Processing-Ms":                   {"321"},
	"Set-Cookie":                             {"__cf_bm=secret; path=/"},
	"Server":                                 {"envoy"},
	"Via":                                    {"1.1 internal-proxy.operator.lan"},
	"Cf-Ray":                                 {"8a1b2c3d4e5f-SJC"},
	"X-Envoy-Upstream-Service-Time":          {"300"},
	"X-Request-Id":                           {"upstream-request-id"},
	"X-Ratelimit-Remaining-Requests":         {"4999"},
	"Anthropic-Ratelimit-Requests-Remaining": {"49"},
	"Retry-After":                            {"7"},
	"Request-Id":                             {"req_upstream"},
}

var (
	forwardedHeaders = []string{"X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining", "Retry-After", "Request-Id"}
	droppedHeaders   = []string{"Openai-Organization", "Openai-Project", "Openai-Processing-Ms", "Set-Cookie", "Server",
		"Via", "Cf-Ray", "X-Envoy-Upstream-Service-Time"}
)

func TestUpstreamHeadersAllowListed(t *testing.T) {
	apptest.Parallel(t)
	chat := map[string]any{"model": "gpt-test", "messages": streamHi, "max_tokens": 100}
	cases := []struct {
		name      string
		typ       int
		path      string
		stream    bool
		status    int  // the upstream's; 0 = success
		forwarded bool // converted answers carry none of the upstream's headers
	}{
		{"openai json", 1, "/v1/chat/completions", false, 0, true},
		{"openai stream", 1, "/v1/chat/completions", true, 0, true},
		{"openai error relayed verbatim", 1, "/v1/chat/completions", false, http.StatusBadRequest, true},
		{"anthropic json", 14, "/v1/messages", false, 0, true},
		{"anthropic stream", 14, "/v1/messages", true, 0, true},
		{"anthropic error relayed verbatim", 14, "/v1/messages", false, http.StatusBadRequest, true},
		{"converted json", 14, "/v1/chat/completions", false, 0, false},
		{"converted stream", 24, "/v1/chat/completions", true, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			up.SetBehavior(fakeupstream.Behavior{Status: tc.status, Header: upstreamHeaders})
			chat["stream"] = tc.stream
			r := e.Call(g.Key, "POST", tc.path, chat, "X-Request-Id", "client-request-1")
			if want := max(tc.status, http.StatusOK); r.Status != want {
				t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
			}
			for _, k := range droppedHeaders {
				if v := r.Header.Values(k); len(v) > 0 {
					t.Errorf("upstream header %s: %q reached the client", k, v)
				}
			}
			if got := r.Header.Values("X-Request-Id"); len(got) != 1 || got[0] != "client-request-1" {
				t.Errorf("X-Request-Id %q, want the gateway's own", got)
			}
			if !tc.forwarded {
				return
			}
			for _, k := range forwardedHeaders {
				// The fake Anthropic sets its own request-id, as Anthropic does.
				if got := r.Header.Get(k); got != upstreamHeaders.Get(k) && (k != "Request-Id" || got == "") {
					t.Errorf("upstream header %s = %q, want %q forwarded", k, got, upstreamHeaders.Get(k))
				}
			}
		})
	}
}

// TestBrokenStreamErrorNamesNoAddress: a stream the upstream's connection
// reset mid-body tells the client it broke and the request id to quote,
// never the network error, which names the upstream's address and port.
func TestBrokenStreamErrorNamesNoAddress(t *testing.T) {
	apptest.Parallel(t)
	cases := []struct {
		name string
		typ  int
		path string
	}{
		{"openai", 1, "/v1/chat/completions"},
		{"anthropic", 14, "/v1/messages"},
		{"anthropic to openai ingress", 14, "/v1/chat/completions"},
		{"gemini to openai ingress", 24, "/v1/chat/completions"},
		{"openai to messages ingress", 1, "/v1/messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			up.SetBehavior(fakeupstream.Behavior{Chunks: 6, FailAfter: 2, ResetOnCut: true})
			r := e.Call(g.Key, "POST", tc.path, map[string]any{"model": "gpt-test", "stream": true,
				"messages": streamHi, "max_tokens": 100}, "X-Request-Id", "broken-stream-1")
			body := string(r.Body)
			u, _ := url.Parse(up.URL)
			if r.Status != http.StatusOK || !strings.Contains(body, "upstream stream broken (request id broken-stream-1)") {
				t.Fatalf("want a stream error with the request id, got %d %s", r.Status, body)
			}
			for _, leak := range []string{u.Host, u.Port(), "127.0.0.1", "tcp", "reset", "EOF"} {
				if strings.Contains(body, leak) {
					t.Errorf("the stream error shows %q: %s", leak, body)
				}
			}
		})
	}
}

// TestOwnLogsHideChannel: a call's consume log names its channel to the
// admin only.
func TestOwnLogsHideChannel(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test", "messages": streamHi}); r.Status != http.StatusOK {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if logs := g.ConsumeLogs(); len(logs) != 1 || logs[0].ChannelID != g.ChannelID {
		t.Fatalf("admin view: %+v, want one log on channel %d", logs, g.ChannelID)
	}
	for _, path := range []string{"/api/log/self?type=2", "/api/log/self/search?keyword=gpt-test"} {
		var own []apptest.LogInfo
		g.User.OK("GET", path, nil).Decode(t, &own)
		if len(own) != 1 || own[0].ChannelID != 0 {
			t.Errorf("GET %s = %+v, want one log without its channel", path, own)
		}
	}
}
