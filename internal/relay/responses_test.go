package relay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// responsesKinds are the channel kinds that serve /v1/responses by
// conversion: Anthropic, Gemini, and an OpenAI-compatible upstream without
// the Responses API (learnt from its 404).
var responsesKinds = []struct {
	name     string
	typ      int
	chatOnly bool
	path     string // the upstream route a converted call reaches
}{
	{"anthropic", 14, false, "/v1/messages"},
	{"gemini", 24, false, "/v1beta/models/gpt-test:"},
	{"chat_only_openai", 1, true, "/v1/chat/completions"},
}

const weatherTool = `{"type":"function","name":"get_weather","description":"Weather of a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

// turn1 asks a question the model answers with a function call.
func turn1(stream bool) string {
	return `{"model":"gpt-test","instructions":"You are terse.","store":true,"stream":` + boolText(stream) +
		`,"tools":[` + weatherTool + `,{"type":"web_search"}],"input":[{"role":"user","content":[{"type":"input_text","text":"Weather in Lisbon?"}]}]}`
}

// turn2 sends the call back with its output.
func turn2(stream bool, callID, args string) string {
	argsJSON, _ := json.Marshal(args)
	return `{"model":"gpt-test","instructions":"You are terse.","stream":` + boolText(stream) + `,"tools":[` + weatherTool + `],"input":[` +
		`{"role":"user","content":"Weather in Lisbon?"},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"},` +
		`{"type":"function_call","id":"fc_x","call_id":"` + callID + `","name":"get_weather","arguments":` + string(argsJSON) + `},` +
		`{"type":"function_call_output","call_id":"` + callID + `","output":"sunny, 24C"}]}`
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

type respItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type respObject struct {
	ID     string     `json:"id"`
	Object string     `json:"object"`
	Status string     `json:"status"`
	Model  string     `json:"model"`
	Store  bool       `json:"store"`
	Output []respItem `json:"output"`
	Usage  struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		TotalTokens        int64 `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

type respEvent struct {
	Type     string      `json:"type"`
	Seq      *int64      `json:"sequence_number"`
	Response *respObject `json:"response"`
	Item     *respItem   `json:"item"`
	Delta    string      `json:"delta"`
	Text     string      `json:"text"`
	Args     string      `json:"arguments"`
}

// readEvents decodes a Responses stream, checking that every event names
// its type in both the event line and the data, and that sequence numbers
// count from 0.
func readEvents(t *testing.T, body []byte) []respEvent {
	t.Helper()
	var out []respEvent
	rd := sse.NewReader(bytes.NewReader(body), 1<<20)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read stream: %v\n%s", err, body)
		}
		var e respEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event %q: %v", ev.Data, err)
		}
		if e.Type != ev.Name || e.Seq == nil || *e.Seq != int64(len(out)) {
			t.Fatalf("event %d: name %q type %q sequence %v", len(out), ev.Name, e.Type, e.Seq)
		}
		out = append(out, e)
	}
}

func types(evs []respEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// compact keeps one of each run of the same event type (deltas).
func compact(ts []string) []string { return slices.Compact(slices.Clone(ts)) }

var (
	callEvents = []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	textEvents = []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
)

// TestResponsesConverted runs a tool-using two-turn exchange through
// /v1/responses on every converting channel kind, as JSON and as a stream,
// and bills each call exactly from the upstream's usage.
func TestResponsesConverted(t *testing.T) {
	apptest.Parallel(t)
	for _, kind := range responsesKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			up.SetChatOnly(kind.chatOnly)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: kind.typ})
			before := g.Quota(g.UserID)
			call := &fakeupstream.ToolCall{Name: "get_weather", Arguments: `{"city":"Lisbon"}`}

			for _, stream := range []bool{false, true} {
				// Turn 1: the model calls the function.
				up.SetBehavior(fakeupstream.Behavior{ToolCall: call, Chunks: 2, PromptTokens: 30, CompletionTokens: 7})
				r := e.Call(g.Key, "POST", "/v1/responses", turn1(stream))
				if r.Status != http.StatusOK {
					t.Fatalf("turn 1 (stream %v): %d %s", stream, r.Status, r.Body)
				}
				sent := up.LastRequest()
				if !strings.HasPrefix(sent.Path, kind.path) || sent.Stream != stream {
					t.Fatalf("turn 1 reached %s (stream %v), want %s…", sent.Path, sent.Stream, kind.path)
				}
				if !bytes.Contains(sent.Body, []byte("You are terse.")) || !bytes.Contains(sent.Body, []byte("get_weather")) ||
					bytes.Contains(sent.Body, []byte("web_search")) {
					t.Fatalf("turn 1 upstream body lacks instructions or tool, or carries the hosted tool: %s", sent.Body)
				}
				var resp respObject
				if stream {
					evs := readEvents(t, r.Body)
					if got := compact(types(evs)); !slices.Equal(got, callEvents) {
						t.Fatalf("turn 1 events:\n got %v\nwant %v", got, callEvents)
					}
					var args string
					for _, ev := range evs {
						if ev.Type == "response.function_call_arguments.delta" {
							args += ev.Delta
						}
					}
					done := evs[len(evs)-2].Item
					if args != call.Arguments || done.Arguments != call.Arguments || done.Type != "function_call" {
						t.Fatalf("streamed arguments %q, done item %+v", args, done)
					}
					if added := evs[2].Item; added.CallID != done.CallID || added.ID != done.ID || added.Status != "in_progress" {
						t.Fatalf("added item %+v, done %+v", added, done)
					}
					resp = *evs[len(evs)-1].Response
				} else {
					r.JSON(t, &resp)
				}
				if resp.Object != "response" || resp.Status != "completed" || resp.Store || len(resp.Output) != 1 {
					t.Fatalf("turn 1 response: %+v", resp)
				}
				fc := resp.Output[0]
				if fc.Type != "function_call" || fc.Name != "get_weather" || fc.Arguments != call.Arguments || fc.CallID == "" ||
					fc.Status != "completed" {
					t.Fatalf("turn 1 output: %+v", fc)
				}
				if resp.Usage.InputTokens != 30 || resp.Usage.OutputTokens != 7 || resp.Usage.TotalTokens != 37 {
					t.Fatalf("turn 1 usage: %+v", resp.Usage)
				}

				// Turn 2: the output goes back under the call's call_id.
				up.SetBehavior(fakeupstream.Behavior{Reply: "Sunny, 24C.", Chunks: 3, PromptTokens: 50, CompletionTokens: 5})
				r = e.Call(g.Key, "POST", "/v1/responses", turn2(stream, fc.CallID, fc.Arguments))
				if r.Status != http.StatusOK {
					t.Fatalf("turn 2 (stream %v): %d %s", stream, r.Status, r.Body)
				}
				sent = up.LastRequest()
				if !bytes.Contains(sent.Body, []byte("sunny, 24C")) || bytes.Contains(sent.Body, []byte("opaque")) {
					t.Fatalf("turn 2 upstream body: %s", sent.Body)
				}
				if kind.typ != 24 && !bytes.Contains(sent.Body, []byte(fc.CallID)) { // Gemini matches by name
					t.Fatalf("turn 2 upstream body lacks the call id %s: %s", fc.CallID, sent.Body)
				}
				if stream {
					evs := readEvents(t, r.Body)
					if got := compact(types(evs)); !slices.Equal(got, textEvents) {
						t.Fatalf("turn 2 events:\n got %v\nwant %v", got, textEvents)
					}
					var text string
					for _, ev := range evs {
						if ev.Type == "response.output_text.delta" {
							text += ev.Delta
						}
						if ev.Type == "response.output_text.done" && ev.Text != "Sunny, 24C." {
							t.Fatalf("output_text.done: %q", ev.Text)
						}
					}
					if text != "Sunny, 24C." {
						t.Fatalf("streamed text %q", text)
					}
					resp = *evs[len(evs)-1].Response
				} else {
					resp = respObject{}
					r.JSON(t, &resp)
				}
				if len(resp.Output) != 1 || resp.Output[0].Type != "message" || resp.Output[0].Role != "assistant" ||
					len(resp.Output[0].Content) != 1 || resp.Output[0].Content[0].Text != "Sunny, 24C." ||
					resp.Output[0].Content[0].Type != "output_text" {
					t.Fatalf("turn 2 output: %+v", resp.Output)
				}
				if resp.Usage.InputTokens != 50 || resp.Usage.OutputTokens != 5 {
					t.Fatalf("turn 2 usage: %+v", resp.Usage)
				}
			}
			// Each of the four calls billed as the upstream reported:
			// 2 quota per input token, 8 per output token.
			want := int64(2 * (30*2 + 7*8 + 50*2 + 5*8))
			if spent := before - g.Quota(g.UserID); spent != want {
				t.Fatalf("spent %d, want %d", spent, want)
			}
			logs := g.ConsumeLogs()
			if len(logs) != 4 || apptest.SumQuota(logs) != want {
				t.Fatalf("consume logs %+v, want 4 summing to %d", logs, want)
			}
		})
	}
}

// TestResponsesPreviousResponseRefused: nothing is stored, so a
// continuation by id is refused before the upstream is called, and not
// billed.
func TestResponsesPreviousResponseRefused(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: 14})
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","previous_response_id":"resp_1","input":"and then?"}`)
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	r.JSON(t, &body)
	if r.Status != http.StatusBadRequest || body.Error.Type != "invalid_request_error" ||
		!strings.Contains(body.Error.Message, "previous_response_id") {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	if up.Count() != 0 || g.Quota(g.UserID) != before {
		t.Fatalf("upstream called %d times, quota %d → %d", up.Count(), before, g.Quota(g.UserID))
	}
}

// TestResponsesLearnsChatOnly: an OpenAI-compatible channel is asked
// natively; its 404 switches it to conversion for a day, then it is asked
// natively again. The setting responses_api overrides what it learns.
func TestResponsesLearnsChatOnly(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	clock := apptest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e.App.SetClock(clock.Now)
	up := fakeupstream.New(t)
	up.SetChatOnly(true)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)
	paths := func(from int) []string {
		var out []string
		for _, r := range up.Requests()[from:] {
			out = append(out, r.Path)
		}
		return out
	}
	ask := func(want ...string) {
		t.Helper()
		n := up.Count()
		r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi"}`)
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if got := paths(n); !slices.Equal(got, want) {
			t.Fatalf("upstream paths %v, want %v", got, want)
		}
	}
	ask("/v1/responses", "/v1/chat/completions") // learns
	ask("/v1/chat/completions")                  // remembered
	clock.Advance(23 * time.Hour)
	ask("/v1/chat/completions")
	clock.Advance(time.Hour)
	ask("/v1/responses", "/v1/chat/completions") // retried after a day: still chat-only
	up.SetChatOnly(false)
	clock.Advance(24 * time.Hour)
	ask("/v1/responses") // retried: the upstream has it now
	ask("/v1/responses")

	// Each call billed once, 12 × 2 + 8 × 8, the refused native tries not at all.
	if spent, want := before-g.Quota(g.UserID), int64(6*88); spent != want {
		t.Fatalf("spent %d, want %d", spent, want)
	}

	// Overrides: convert never asks natively; native never converts.
	g.Root.OK("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "setting": `{"responses_api":"convert"}`})
	ask("/v1/chat/completions")
	up.SetChatOnly(true)
	g.Root.OK("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "setting": `{"responses_api":"native"}`})
	n := up.Count()
	r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi"}`)
	if r.Status != http.StatusNotFound || !slices.Equal(paths(n), []string{"/v1/responses"}) {
		t.Fatalf("native override: %d %s, paths %v", r.Status, r.Body, paths(n))
	}

	// A setting that is not an object, or names another mode, is refused
	// and changes nothing.
	for _, bad := range []string{`[1]`, `{"responses_api":"sometimes"}`, `{"responses_api":1}`, `{"responses_api":"auto"`} {
		g.Root.Fail("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "setting": bad}, http.StatusOK, channel.MsgSettingInvalid)
	}
	g.Root.Fail("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "setting": "{\"responses_api\":\"auto\x00\"}"},
		http.StatusOK, "渠道设置 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符")
	var ch struct {
		Setting string `json:"setting"`
	}
	g.Root.OK("GET", apptest.Path("/api/channel/%d", g.ChannelID), nil).Decode(t, &ch)
	if ch.Setting != `{"responses_api":"native"}` {
		t.Fatalf("setting %q", ch.Setting)
	}
}

// TestResponsesParallelLearning: a hundred identical calls race on a
// chat-only channel nobody has learnt yet. Each is answered once and
// billed once; the refused native tries bill nothing.
func TestResponsesParallelLearning(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetChatOnly(true)
	// Enough balance for every call's hold at once (the default
	// completion size each).
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Quota: 100_000_000})
	before := g.Quota(g.UserID)
	const n = 100
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi","stream":`+boolText(i%2 == 0)+`}`)
			statuses[i] = r.Status
			if r.Status != http.StatusOK {
				t.Logf("call %d: %s", i, r.Body)
			}
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("call %d: %d", i, s)
		}
	}
	chat := 0
	for _, r := range up.Requests() {
		if r.Path == "/v1/chat/completions" {
			chat++
		}
	}
	if chat != n {
		t.Fatalf("%d chat calls upstream, want %d", chat, n)
	}
	if spent := before - g.Quota(g.UserID); spent != n*88 {
		t.Fatalf("spent %d, want %d", spent, n*88)
	}
	if logs := g.ConsumeLogs(); len(logs) != n {
		t.Fatalf("%d consume logs, want %d", len(logs), n)
	}
}

// TestResponsesStreamBroken: an upstream that cuts its stream ends the
// converted stream with response.failed, never response.completed.
func TestResponsesStreamBroken(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: 14})
	up.SetBehavior(fakeupstream.Behavior{Chunks: 3, FailAfter: 1})
	r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi","stream":true}`)
	evs := readEvents(t, r.Body)
	last := evs[len(evs)-1]
	if r.Status != http.StatusOK || last.Type != "response.failed" || slices.Contains(types(evs), "response.completed") {
		t.Fatalf("events %v", types(evs))
	}
}

// TestResponsesUnknownModelNotLearnt: OpenAI answers an unknown model 404
// model_not_found on /v1/responses too; that 404 is the client's answer,
// relayed as it came, and the channel keeps its Responses API.
func TestResponsesUnknownModelNotLearnt(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	up.Script(fakeupstream.Behavior{Status: http.StatusNotFound})
	r := e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi"}`)
	if r.Status != http.StatusNotFound || !bytes.Contains(r.Body, []byte(`"model_not_found"`)) || up.Count() != 1 {
		t.Fatalf("%d %s after %d upstream calls", r.Status, r.Body, up.Count())
	}
	r = e.Call(g.Key, "POST", "/v1/responses", `{"model":"gpt-test","input":"hi"}`)
	if r.Status != http.StatusOK || up.LastRequest().Path != "/v1/responses" {
		t.Fatalf("%d %s via %s", r.Status, r.Body, up.LastRequest().Path)
	}
}
