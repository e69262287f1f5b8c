package metrics_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// otlpReceiver is a local OTLP/HTTP trace receiver: it keeps every span
// the gateway exports.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer collector-token" {
		http.Error(w, "unexpected "+r.URL.Path, http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	// protojson holds the export to OTLP's JSON mapping (field names,
	// 64-bit integers as strings, enums as numbers); it reads the hex ids
	// as base64, consistently, which the comparisons below allow.
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue()
		}
	}
	return nil
}

func TestTracesOverOTLP(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	e := apptest.New(t, "OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/", "OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20collector-token")
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false), "X-Request-Id", "trace-ok"); r.Status != http.StatusOK {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	up.Script(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", chat("gpt-test", false), "X-Request-Id", "trace-fail"); r.Status != http.StatusBadGateway {
		t.Fatalf("failing upstream: %d %s", r.Status, r.Body)
	}
	e.Stop() // Close sends the batched spans

	recv.mu.Lock()
	spans := recv.spans
	recv.mu.Unlock()
	calls := map[string]*tracepb.Span{}
	var upstreams []*tracepb.Span
	for _, s := range spans {
		switch s.GetName() {
		case "relay.chat":
			calls[attr(s, "modelgate.request_id").GetStringValue()] = s
		case "upstream":
			upstreams = append(upstreams, s)
		}
		for _, a := range s.GetAttributes() {
			v := a.GetValue().String()
			for _, secret := range []string{"secret prompt text", g.Key, "upstream-key", "Hello"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s holds %q", s.GetName(), a.GetKey(), secret)
				}
			}
		}
	}
	ok, failed := calls["trace-ok"], calls["trace-fail"]
	if ok == nil || failed == nil {
		t.Fatalf("relay spans by request id: %v (of %d spans)", calls, len(spans))
	}
	if got := attr(ok, "http.response.status_code").GetIntValue(); got != 200 {
		t.Errorf("ok call status attribute %d", got)
	}
	if attr(ok, "modelgate.model").GetStringValue() != "gpt-test" || attr(ok, "modelgate.prompt_tokens").GetIntValue() != 12 {
		t.Errorf("ok call attributes %v", ok.GetAttributes())
	}
	if failed.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed call span status %v", failed.GetStatus())
	}
	if len(upstreams) != 2 {
		t.Fatalf("%d upstream spans, want 2", len(upstreams))
	}
	for _, u := range upstreams {
		parent := hex.EncodeToString(u.GetParentSpanId())
		var of *tracepb.Span
		for _, c := range calls {
			if hex.EncodeToString(c.GetSpanId()) == parent && string(c.GetTraceId()) == string(u.GetTraceId()) {
				of = c
			}
		}
		if of == nil {
			t.Fatalf("upstream span %v is not a child of a call's span", u.GetAttributes())
		}
		if attr(u, "modelgate.channel").GetStringValue() != "upstream" ||
			attr(u, "modelgate.request_id").GetStringValue() != attr(of, "modelgate.request_id").GetStringValue() {
			t.Errorf("upstream span attributes %v", u.GetAttributes())
		}
		if of == failed && (attr(u, "modelgate.failure").GetStringValue() != "server_error" || attr(u, "http.response.status_code").GetIntValue() != 500) {
			t.Errorf("failed upstream span attributes %v", u.GetAttributes())
		}
	}
}
