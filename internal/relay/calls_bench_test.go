package relay_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// BenchmarkCalls measures whole calls through the HTTP surface, per pair of
// ingress and channel dialect, with allocations: the client, the relay and
// the fake upstream run in this process, so allocs/op counts all three;
// compare runs of two commits, not with cmd/bench's figures.
//
//	go test ./internal/relay -run '^$' -bench Calls -benchmem
func BenchmarkCalls(b *testing.B) {
	chat := map[string]any{"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	chatStream := map[string]any{"model": "gpt-test", "stream": true, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	messages := map[string]any{"model": "gpt-test", "max_tokens": 64, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	for _, bc := range []struct {
		name string
		typ  int
		path string
		body any
	}{
		{"openai_passthrough", 1, "/v1/chat/completions", chat},
		{"openai_passthrough_stream", 1, "/v1/chat/completions", chatStream},
		{"chat_to_anthropic", 14, "/v1/chat/completions", chat},
		{"chat_to_anthropic_stream", 14, "/v1/chat/completions", chatStream},
		{"chat_to_gemini", 24, "/v1/chat/completions", chat},
		{"messages_passthrough", 14, "/v1/messages", messages},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := apptest.New(b)
			up := fakeupstream.New(b)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: bc.typ, Quota: 1 << 40})
			b.ReportAllocs()
			for b.Loop() {
				if r := e.Call(g.Key, "POST", bc.path, bc.body); r.Status != http.StatusOK {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
		})
	}
}
