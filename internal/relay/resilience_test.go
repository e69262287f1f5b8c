package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/tokencount"
)

// sseData returns the data of every event in an SSE body, in order.
func sseData(body []byte) []string {
	var out []string
	for _, block := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		var data []string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, v)
			}
		}
		if len(data) > 0 {
			out = append(out, strings.Join(data, "\n"))
		}
	}
	return out
}

var streamHi = []map[string]string{{"role": "user", "content": "hi"}}

func TestMidStreamFailureIsReportedAndBilled(t *testing.T) {
	apptest.Parallel(t)
	cases := []struct {
		name    string
		typ     int
		path    string
		body    map[string]any
		noEnd   string // what a broken stream must not end with
		errMark string
	}{
		{"openai", 1, "/v1/chat/completions", map[string]any{"messages": streamHi}, "[DONE]", `{"error":`},
		{"anthropic", 14, "/v1/messages", map[string]any{"messages": streamHi, "max_tokens": 100}, "message_stop", "event: error"},
		{"anthropic to openai ingress", 14, "/v1/chat/completions", map[string]any{"messages": streamHi, "max_tokens": 100}, "[DONE]", `{"error":`},
		{"gemini to openai ingress", 24, "/v1/chat/completions", map[string]any{"messages": streamHi}, "[DONE]", `{"error":`},
		{"openai to messages ingress", 1, "/v1/messages", map[string]any{"messages": streamHi, "max_tokens": 100}, "message_stop", "event: error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			second := fakeupstream.New(t)
			g.AddChannel(apptest.ChannelSpec{URL: second.URL, Type: tc.typ, Priority: -1})
			const reply = "one two three four five six"
			up.Script(fakeupstream.Behavior{Reply: reply, Chunks: 6, FailAfter: 4})
			before := g.Quota(g.UserID)
			tc.body["model"], tc.body["stream"] = "gpt-test", true
			r := e.Call(g.Key, "POST", tc.path, tc.body)
			body := string(r.Body)
			if r.Status != http.StatusOK || !strings.Contains(body, tc.errMark) || strings.Contains(body, tc.noEnd) {
				t.Fatalf("want a stream with an error and no %s, got %d %s", tc.noEnd, r.Status, body)
			}
			if second.Count() != 0 {
				t.Fatal("a started stream was retried on another channel")
			}
			logs := g.AllConsumeLogs()
			if len(logs) != 1 || !logs[0].IsStream || logs[0].Quota <= 0 {
				t.Fatalf("want one stream log billing the produced part, got %+v", logs)
			}
			// Billed the local count of what was produced (Anthropic's
			// message_start reported 1 output token; Gemini's running
			// total may be higher, and then stands), its input as reported.
			var counter tokencount.Counter
			produced := counter.Count("gpt-test", streamedPrefix(reply, 6, 4))
			if l := logs[0]; l.CompletionTokens < produced || (tc.typ != 24 && l.CompletionTokens != produced) {
				t.Fatalf("completion tokens %d, want the local count %d of %q", l.CompletionTokens, produced, streamedPrefix(reply, 6, 4))
			}
			if l := logs[0]; tc.typ != 1 && l.PromptTokens != fakeupstream.DefaultPromptTokens {
				t.Fatalf("prompt tokens %d, want the %d the upstream reported first", l.PromptTokens, fakeupstream.DefaultPromptTokens)
			}
			if spent := before - g.Quota(g.UserID); spent != logs[0].Quota {
				t.Fatalf("spent %d, logged %d", spent, logs[0].Quota)
			}
		})
	}
}

// streamedPrefix is the text of the first n of the chunks pieces a
// fakeupstream stream splits reply into.
func streamedPrefix(reply string, chunks, n int) string {
	runes := []rune(reply)
	return string(runes[:n*len(runes)/chunks])
}

func TestLongSSEEventPassesIntact(t *testing.T) {
	apptest.Parallel(t)
	args := `{"text":"` + strings.Repeat("abcdefghij", 7*1024) + `"}` // ≈70 KiB in one event
	for _, typ := range []int{1, 14} {
		t.Run(apptest.Path("channel type %d", typ), func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: typ})
			up.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "save", Arguments: args}, Chunks: 1})
			r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test", "stream": true,
				"max_tokens": 100, "messages": streamHi})
			var got strings.Builder
			for _, d := range sseData(r.Body) {
				var chunk struct {
					Choices []struct {
						Delta struct {
							ToolCalls []struct {
								Function struct{ Arguments string } `json:"function"`
							} `json:"tool_calls"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if d == "[DONE]" || json.Unmarshal([]byte(d), &chunk) != nil || len(chunk.Choices) == 0 {
					continue
				}
				for _, tc := range chunk.Choices[0].Delta.ToolCalls {
					got.WriteString(tc.Function.Arguments)
				}
			}
			if r.Status != http.StatusOK || got.String() != args || !strings.HasSuffix(string(r.Body), "data: [DONE]\n\n") {
				t.Fatalf("status %d, arguments %d bytes (want %d), body ends %q", r.Status, got.Len(), len(args),
					r.Body[max(0, len(r.Body)-40):])
			}
		})
	}
}

func TestGarbageAnswerIs502AndReleasesTheHold(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range []struct {
		name  string
		typ   int
		price map[string]any
	}{
		{"openai tokens", 1, nil},
		{"openai per request", 1, map[string]any{"billing_type": "per_request", "per_request_price": 0.05}},
		{"anthropic", 14, nil},
		{"gemini", 24, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			if tc.price != nil {
				setPrice(t, g, "gpt-test", tc.price)
			}
			up.SetBehavior(fakeupstream.Behavior{Garbage: true})
			before := g.Quota(g.UserID)
			for _, stream := range []bool{false, true} {
				r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test", "stream": stream,
					"max_tokens": 100, "messages": streamHi})
				if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "无法解析") {
					t.Fatalf("stream %v: want 502 saying the answer was unreadable, got %d %s", stream, r.Status, r.Body)
				}
			}
			if got := g.Quota(g.UserID); got != before || len(g.AllConsumeLogs()) != 0 {
				t.Fatalf("balance %d → %d after garbage", before, got)
			}
		})
	}
}

// setPrice changes a model's price through the API.
func setPrice(t *testing.T, g *apptest.Gateway, model string, fields map[string]any) {
	t.Helper()
	var prices []struct {
		ID        int64  `json:"id"`
		ModelName string `json:"model_name"`
	}
	g.Root.OK("GET", "/api/model_price/?page_size=100", nil).Decode(t, &prices)
	for _, p := range prices {
		if p.ModelName == model {
			body := map[string]any{"id": p.ID}
			for k, v := range fields {
				body[k] = v
			}
			g.Root.OK("PUT", "/api/model_price/", body)
			return
		}
	}
	t.Fatalf("no price for %s", model)
}

func TestClientCancelEndsTheUpstreamRequest(t *testing.T) {
	apptest.Parallel(t)
	for _, stream := range []bool{false, true} {
		t.Run(apptest.Path("stream %v", stream), func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
			up.SetBehavior(fakeupstream.Behavior{Hang: true})
			g.SetOption("StreamDrainSeconds", "1") // a stream's upstream outlives its client by this grace
			body, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": stream, "messages": streamHi})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", e.Server.URL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+g.Key)
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			up.WaitOpen(t, 1, 5*time.Second)
			cancel()
			if err := <-done; err == nil {
				t.Fatal("the hanging call ended without the cancel")
			}
			up.WaitOpen(t, 0, 5*time.Second)
			if err := e.App.FlushBilling(5 * time.Second); err != nil {
				t.Fatalf("relay still serving the cancelled call: %v", err)
			}
		})
	}
}

func TestUnknownFieldsReachTheUpstreamUntouched(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	// With a completion limit sent, strict billing adds none.
	sent := `{"model":"gpt-test","messages":[{"role":"user","content":"hi","name":"ann"}],"max_tokens":300,` +
		`"foo_extra":{"x":1,"nested":[true,null,"s"]},"logit_bias":{"50256":-100},"seed":7,"user":"u-1"}`
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", sent); r.Status != http.StatusOK {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if got := string(up.LastRequest().Body); got != sent {
		t.Fatalf("body changed on the way:\n got %s\nwant %s", got, sent)
	}
	// A stream needs usage turned on: only stream_options is added.
	streamed := strings.Replace(sent, `"seed":7`, `"seed":7,"stream":true`, 1)
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", streamed); r.Status != http.StatusOK {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	got, want := decodeObject(t, up.LastRequest().Body), decodeObject(t, []byte(streamed))
	want["stream_options"] = map[string]any{"include_usage": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stream body:\n got %v\nwant %v", got, want)
	}
}

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func TestModelMappingRewritesOnlyTheUpstreamModel(t *testing.T) {
	apptest.Parallel(t)
	for _, typ := range []int{1, 14, 24} {
		t.Run(apptest.Path("channel type %d", typ), func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: typ,
				ModelMapping: `{"gpt-test":"real-model-2"}`})
			sent := map[string]any{"model": "gpt-test", "messages": streamHi, "max_tokens": 50, "foo_extra": 1}
			if r := e.Call(g.Key, "POST", "/v1/chat/completions", sent); r.Status != http.StatusOK {
				t.Fatalf("call: %d %s", r.Status, r.Body)
			}
			if got := up.LastRequest().Model; got != "real-model-2" {
				t.Fatalf("upstream got model %q", got)
			}
			if typ == 1 { // same dialect: everything else as sent
				got := decodeObject(t, up.LastRequest().Body)
				if got["foo_extra"] != 1.0 || len(got) != len(sent) {
					t.Fatalf("mapped body %v", got)
				}
			}
			// The price of the requested model applies (the mapped one has none).
			logs := g.AllConsumeLogs()
			if len(logs) != 1 || logs[0].ModelName != "gpt-test" || logs[0].Quota != 88 {
				t.Fatalf("want one log for gpt-test of 88, got %+v", logs)
			}
		})
	}
}

// Each text delta reaches the client while the upstream waits to send the
// next (fakeupstream's DeltaGate): a relay that kept a delta in its buffer
// until the next one came would never see the next.
func TestStreamsAreFlushedEventByEvent(t *testing.T) {
	apptest.Parallel(t)
	for _, tc := range []struct {
		name string
		typ  int
		path string
	}{
		{"openai", 1, "/v1/chat/completions"},
		{"anthropic", 14, "/v1/messages"},
		{"anthropic to openai ingress", 14, "/v1/chat/completions"},
		{"openai to messages ingress", 1, "/v1/messages"},
		{"responses", 1, "/v1/responses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.typ})
			gate := make(chan struct{})
			// Four deltas of four runes each.
			up.SetBehavior(fakeupstream.Behavior{Reply: "AAAABBBBCCCCDDDD", Chunks: 4, DeltaGate: gate})
			body, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": true, "max_tokens": 100,
				"messages": streamHi, "input": "hi"})
			req, _ := http.NewRequest("POST", e.Server.URL+tc.path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+g.Key)
			// A relay that holds a delta leaves this client waiting: its
			// timeout ends the test instead.
			client := &http.Client{Timeout: 20 * time.Second}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			words := []string{"AAAA", "BBBB", "CCCC", "DDDD"}
			var got strings.Builder
			buf := make([]byte, 64<<10)
			for next := 0; next < len(words); {
				n, err := resp.Body.Read(buf)
				got.Write(buf[:n])
				for next < len(words) && strings.Contains(got.String(), words[next]) {
					next++
					if next < len(words) {
						gate <- struct{}{} // the upstream waits for it
					}
				}
				if err != nil && next < len(words) {
					t.Fatalf("delta %q never reached the client while the upstream waited (%v); got %q", words[next], err, got.String())
				}
			}
			io.Copy(io.Discard, resp.Body)
		})
	}
}
