package relay_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

func TestSmokeChatJSONAndStream(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "Hello from fake upstream") {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	if got := up.LastRequest().Header.Get("Authorization"); got != "Bearer upstream-key" {
		t.Fatalf("upstream got Authorization %q", got)
	}
	// 12 prompt tokens at 2 CNY/1M + 8 completion tokens at 8 CNY/1M = 24 + 64 quota.
	if spent := before - g.Quota(g.UserID); spent != 88 {
		t.Fatalf("spent %d, want 88", spent)
	}
	r = e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if r.Status != http.StatusOK || !strings.HasSuffix(string(r.Body), "data: [DONE]\n\n") || strings.Contains(string(r.Body), `"choices":[]`) {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	if spent := before - g.Quota(g.UserID); spent != 176 {
		t.Fatalf("spent %d after the stream, want 176", spent)
	}
}
