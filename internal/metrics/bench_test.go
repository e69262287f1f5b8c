package metrics

import (
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/relay"
)

// BenchmarkCallDone is the relay's per-call metrics cost (a cached label
// set): go test -bench CallDone ./internal/metrics.
func BenchmarkCallDone(b *testing.B) {
	m := New()
	r := &relay.Report{Endpoint: "chat", Model: "gpt-test", Channel: "upstream", Status: 200, Billing: "balance",
		PromptTokens: 12, CompletionTokens: 8, Quota: 88, Upstream: 120 * time.Millisecond, Gateway: 400 * time.Microsecond, Total: 121 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.CallDone(r)
		}
	})
}
