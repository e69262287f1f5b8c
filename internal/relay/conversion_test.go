package relay_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/conversions")

// goldenRequestID is sent as X-Request-Id, so the ids the relay derives
// from it (chatcmpl-…, msg_…) are the same on every run.
const goldenRequestID = "golden-1"

// Each case sends the same request through the HTTP surface twice, as JSON
// and as a stream, and keeps in testdata/conversions/<name>.*.json what the
// upstream received and what the client got back.
var conversionCases = []struct {
	name     string
	typ      int // channel type
	path     string
	input    string
	verbatim bool // same dialect: the upstream gets the client's bytes
}{
	{"openai_to_anthropic", 14, "/v1/chat/completions", "openai_chat.in.json", false},
	{"openai_to_gemini", 24, "/v1/chat/completions", "openai_chat.in.json", false},
	{"messages_to_openai", 1, "/v1/messages", "anthropic_messages.in.json", false},
	{"messages_to_anthropic", 14, "/v1/messages", "anthropic_messages.in.json", true},
}

func TestConversionsThroughHTTP(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range conversionCases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "conversions", tc.input))
			if err != nil {
				t.Fatal(err)
			}
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			golden := func(part string, got []byte) {
				t.Helper()
				goldenFile(t, filepath.Join("testdata", "conversions", tc.name+"."+part+".json"), got)
			}

			before := g.Quota(g.UserID)
			up.SetBehavior(fakeupstream.Behavior{Reply: "It is sunny in Lisbon."})
			r := e.Call(g.Key, "POST", tc.path, in, "X-Request-Id", goldenRequestID)
			if r.Status != http.StatusOK {
				t.Fatalf("JSON call: %d %s", r.Status, r.Body)
			}
			sent := up.LastRequest().Body
			if tc.verbatim && !bytes.Equal(sent, in) {
				t.Fatalf("same-dialect body changed:\n got %s\nwant %s", sent, in)
			}
			golden("upstream_request", sent)
			golden("response", r.Body)

			// The stream answers with a tool call split over two deltas.
			up.SetBehavior(fakeupstream.Behavior{Chunks: 2,
				ToolCall: &fakeupstream.ToolCall{Name: "get_weather", Arguments: `{"city":"Lisbon"}`}})
			set := map[string]any{"stream": true}
			if tc.path == "/v1/chat/completions" {
				set["stream_options"] = map[string]bool{"include_usage": true}
			}
			r = e.Call(g.Key, "POST", tc.path, withFields(t, in, set), "X-Request-Id", goldenRequestID)
			if r.Status != http.StatusOK || !up.LastRequest().Stream {
				t.Fatalf("stream call: %d %s", r.Status, r.Body)
			}
			if tc.verbatim && !reflect.DeepEqual(decodeObject(t, up.LastRequest().Body), decodeObject(t, withFields(t, in, set))) {
				t.Fatalf("same-dialect stream body changed: %s", up.LastRequest().Body)
			}
			golden("stream", streamEvents(t, r.Body))

			// Both calls billed from the upstream's usage: 12 × 2 + 8 × 8.
			if spent := before - g.Quota(g.UserID); spent != 2*88 {
				t.Fatalf("spent %d, want %d", spent, 2*88)
			}
		})
	}
}

// withFields returns the JSON object body with fields set.
func withFields(t *testing.T, body []byte, set map[string]any) []byte {
	t.Helper()
	m := decodeObject(t, body)
	for k, v := range set {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// streamEvents turns an SSE body into a JSON array of {event, data}, data
// decoded where it is JSON ("[DONE]" stays a string).
func streamEvents(t *testing.T, body []byte) []byte {
	t.Helper()
	type event struct {
		Event string          `json:"event,omitempty"`
		Data  json.RawMessage `json:"data"`
	}
	var events []event
	rd := sse.NewReader(bytes.NewReader(body), 1<<20)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read client stream: %v\n%s", err, body)
		}
		data := append(json.RawMessage(nil), ev.Data...)
		if !json.Valid(data) {
			data, _ = json.Marshal(string(ev.Data))
		}
		events = append(events, event{Event: ev.Name, Data: data})
	}
	b, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// timestamps are the fields that change from run to run.
var timestamps = regexp.MustCompile(`"(created|created_at)":\s*\d+`)

// goldenFile compares a JSON document, timestamps zeroed and indented,
// with the golden file at path (rewritten with -update).
func goldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	got = timestamps.ReplaceAll(got, []byte(`"$1":0`))
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(got), "", "  "); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", path, err, got)
	}
	buf.WriteByte('\n')
	if *updateGolden {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Conversions -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs:\n got %s\nwant %s", path, buf.Bytes(), want)
	}
}
