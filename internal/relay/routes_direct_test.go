package relay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
)

// The endpoints' calls skip the muxes (relay.Direct) and are answered as
// the muxes answer them: the exact paths relayed, an escaped, unclean or
// longer path routed by the mux (its redirect, its 404 in the dialect's
// shape), a wrong method refused with the endpoint's Allow.
func TestEndpointCallsRouteAsTheMuxDoes(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	body, _ := json.Marshal(authChat("gpt-test"))
	for _, tt := range []struct {
		name, method, path string
		direct             bool
		status             int
		location, message  string
	}{
		{"chat", "POST", "/v1/chat/completions", true, 200, "", ""},
		{"messages", "POST", "/v1/messages", true, 200, "", ""},
		{"wrong method", "GET", "/v1/chat/completions", true, 405, "", "请求方法 GET 不适用于 /v1/chat/completions,允许: POST"},
		{"escaped slash", "POST", "/v1/chat%2Fcompletions", false, 404, "", "Unknown request URL: POST /v1/chat/completions"},
		{"double slash", "POST", "/v1//chat/completions", false, 307, "/v1/chat/completions", ""},
		{"dot segment", "POST", "/v1/./chat/completions", false, 307, "/v1/chat/completions", ""},
		{"trailing slash", "POST", "/v1/chat/completions/", false, 404, "", "Unknown request URL: POST /v1/chat/completions/"},
		{"query", "POST", "/v1/chat/completions?x=1", true, 200, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, e.Server.URL+tt.path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if got := relay.Direct(req); got != tt.direct {
				t.Fatalf("relay.Direct = %v, want %v", got, tt.direct)
			}
			req.Header.Set("Authorization", "Bearer "+g.Key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, resp.StatusCode, out, tt.status)
			}
			if tt.location != "" && resp.Header.Get("Location") != tt.location {
				t.Fatalf("Location = %q, want %q", resp.Header.Get("Location"), tt.location)
			}
			if tt.message != "" {
				authWantError(t, &apptest.V1{Status: resp.StatusCode, Header: resp.Header, Body: out}, tt.status, tt.message)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("the answer lacks nosniff")
			}
		})
	}
	connect, _ := http.NewRequest(http.MethodConnect, e.Server.URL+"/v1/chat/completions", nil)
	if relay.Direct(connect) {
		t.Fatal("a CONNECT is direct: the mux does not clean its path")
	}
}
