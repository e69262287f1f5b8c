package responses

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

func decode(t *testing.T, body string) *Request {
	t.Helper()
	var r Request
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestToChatRequest(t *testing.T) {
	in := decode(t, `{"model":"m","instructions":"Be brief.","max_output_tokens":100,"stream":true,
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"web_search"},{"type":"custom","name":"apply_patch"}],
		"tool_choice":{"type":"function","name":"f"},
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},
		{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/y.png"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"calling"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
		{"type":"function_call","call_id":"c2","name":"f","arguments":""},
		{"type":"reasoning","id":"rs","encrypted_content":"x"},
		{"type":"function_call_output","call_id":"c1","output":"one"},
		{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"t"},{"type":"input_text","text":"wo"}]}]}`)
	out, err := ToChatRequest(in, "upstream-m")
	if err != nil {
		t.Fatal(err)
	}
	if out.Model != "upstream-m" || !out.Stream || out.StreamOptions == nil || *out.MaxTokens != 100 {
		t.Fatalf("request %+v", out)
	}
	var roles []string
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "system", "user", "assistant", "tool", "tool"}; !slices.Equal(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	if string(out.Messages[0].Content) != `"Be brief."` || string(out.Messages[1].Content) != `"dev"` {
		t.Fatalf("system messages %s %s", out.Messages[0].Content, out.Messages[1].Content)
	}
	parts, _ := openai.Parts(out.Messages[2].Content)
	if len(parts) != 2 || parts[1].ImageURL == nil || parts[1].ImageURL.URL != "https://x/y.png" {
		t.Fatalf("user parts %+v", parts)
	}
	a := out.Messages[3]
	if string(a.Content) != `"calling"` || len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != "c1" ||
		a.ToolCalls[1].Function.Arguments != "{}" {
		t.Fatalf("assistant %+v", a)
	}
	if out.Messages[4].ToolCallID != "c1" || string(out.Messages[5].Content) != `"two"` {
		t.Fatalf("tool messages %+v", out.Messages[4:])
	}
	if len(out.Tools) != 1 || out.Tools[0].Function.Name != "f" || string(out.ToolChoice) != `{"function":{"name":"f"},"type":"function"}` {
		t.Fatalf("tools %+v choice %s", out.Tools, out.ToolChoice)
	}
}

func TestToChatRequestRefusals(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{`{"model":"m"}`, "input is required"},
		{`{"model":"m","input":[]}`, "input is required"},
		{`{"model":"m","input":[{"type":"file_search_call"}]}`, `"file_search_call"`},
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, `role "robot"`},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, `"input_file"`},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "image_url"},
		{`{"model":"m","input":[{"type":"function_call","name":"f"}]}`, "call_id"},
		{`{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "call_id"},
		{`{"model":"m","input":"x","tools":[{"type":"function"}]}`, "name"},
		{`{"model":"m","input":{"a":1}}`, "input"},
	} {
		_, err := ToChatRequest(decode(t, tc.body), "m")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want one naming %s", tc.body, err, tc.want)
		}
	}
	_, err := ToChatRequest(decode(t, `{"input":"x","previous_response_id":"r"}`), "m")
	if !errors.Is(err, ErrPreviousResponse) {
		t.Fatal(err)
	}
}

func TestFromChatResponse(t *testing.T) {
	in := decode(t, `{"model":"m","input":"x","instructions":"i"}`)
	chat := &openai.ChatResponse{Choices: []openai.Choice{{FinishReason: "length", Message: openai.Message{Role: "assistant",
		Content: openai.TextContent("partial"), ToolCalls: []openai.ToolCall{{ID: "", Function: openai.FunctionCall{Name: "f"}}}}}}}
	u := openai.Usage{PromptTokens: 10, CompletionTokens: 4, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 3}}
	r := FromChatResponse(in, chat, u, "m", "rid", 7)
	if r.ID != "resp_rid" || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.Store ||
		*r.Instructions != "i" || len(r.Output) != 2 {
		t.Fatalf("%+v", r)
	}
	if r.Output[0].Status != "incomplete" || (*r.Output[0].Content)[0].Text != "partial" {
		t.Fatalf("message %+v", r.Output[0])
	}
	if c := r.Output[1]; c.CallID != "call_rid_1" || *c.Arguments != "{}" || c.ID != "fc_rid_1" {
		t.Fatalf("call %+v", c)
	}
	if *r.Usage != (Usage{InputTokens: 10, InputTokensDetails: InputDetail{3}, OutputTokens: 4, TotalTokens: 14}) {
		t.Fatalf("usage %+v", r.Usage)
	}
}

func ptr[T any](v T) *T { return &v }

// TestStreamOrder: text, then two tool calls (the second interleaving its
// id chunk), then the finish and usage chunks.
func TestStreamOrder(t *testing.T) {
	s := NewStream(decode(t, `{"model":"m","input":"x"}`), "m", "rid", 1)
	var evs []string
	var data []map[string]any
	feed := func(c openai.ChatChunk) {
		for _, ev := range s.Convert(&c) {
			evs = append(evs, ev.Name)
			var m map[string]any
			json.Unmarshal(ev.Data, &m)
			data = append(data, m)
		}
	}
	for _, ev := range s.Start() {
		evs = append(evs, ev.Name)
		var m map[string]any
		json.Unmarshal(ev.Data, &m)
		data = append(data, m)
	}
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{Role: "assistant", Content: ptr("")}}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{Content: ptr("Hi")}}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCall{
		{Index: ptr(0), ID: "c1", Function: openai.FunctionCall{Name: "f", Arguments: `{"a"`}}}}}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCall{
		{Index: ptr(0), Function: openai.FunctionCall{Arguments: `:1}`}}}}}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCall{
		{Index: ptr(1), ID: "c2", Function: openai.FunctionCall{Name: "g"}}}}}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{{FinishReason: ptr("tool_calls")}}})
	feed(openai.ChatChunk{Choices: []openai.ChunkChoice{}, Usage: &openai.Usage{PromptTokens: 5, CompletionTokens: 2}})
	for _, ev := range s.Finish() {
		evs = append(evs, ev.Name)
		var m map[string]any
		json.Unmarshal(ev.Data, &m)
		data = append(data, m)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if !slices.Equal(evs, want) {
		t.Fatalf("events\n got %v\nwant %v", evs, want)
	}
	for i, m := range data {
		if m["sequence_number"] != float64(i) || m["type"] != evs[i] {
			t.Fatalf("event %d: %v", i, m)
		}
	}
	if d := data[11]; d["arguments"] != `{"a":1}` || d["item_id"] != "fc_rid_1" || d["output_index"] != float64(1) {
		t.Fatalf("arguments.done %v", d)
	}
	if d := data[15]["item"].(map[string]any); d["arguments"] != "{}" || d["call_id"] != "c2" {
		t.Fatalf("second call %v", d)
	}
	final := data[16]["response"].(map[string]any)
	usage := final["usage"].(map[string]any)
	if final["status"] != "completed" || len(final["output"].([]any)) != 3 || usage["input_tokens"] != float64(5) ||
		usage["output_tokens"] != float64(2) || usage["total_tokens"] != float64(7) {
		t.Fatalf("completed %v", final)
	}
	if s.Finish() != nil || s.Fail("x") != nil {
		t.Fatal("events after the end")
	}
}

func TestStreamIncompleteAndFailed(t *testing.T) {
	s := NewStream(decode(t, `{"model":"m","input":"x"}`), "m", "rid", 1)
	s.Convert(&openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{Content: ptr("cut")}, FinishReason: ptr("length")}}})
	out := s.Finish()
	last := out[len(out)-1]
	if last.Name != "response.incomplete" || !strings.Contains(string(last.Data), `"reason":"max_output_tokens"`) ||
		!strings.Contains(string(last.Data), `"status":"incomplete"`) {
		t.Fatalf("%s %s", last.Name, last.Data)
	}

	s = NewStream(decode(t, `{"model":"m","input":"x"}`), "m", "rid", 1)
	s.Convert(&openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{Content: ptr("half")}}}})
	out = s.Fail("upstream stream broken (request id rid)")
	if len(out) != 1 || out[0].Name != "response.failed" || !strings.Contains(string(out[0].Data), "request id rid") {
		t.Fatalf("%+v", out)
	}
}
