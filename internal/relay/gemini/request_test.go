package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

func TestFromChatRequestGolden(t *testing.T) {
	for in, out := range cases(t, "request", ".json") {
		t.Run(in, func(t *testing.T) {
			var req openai.ChatRequest
			decodeFile(t, in, &req, true)
			got, err := FromChatRequest(&req)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, out, got)
		})
	}
}

func TestFromChatRequestInvalid(t *testing.T) {
	call := func(id, name, args string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	user := openai.Message{Role: "user", Content: openai.TextContent("hi")}
	tests := []struct {
		name string
		req  openai.ChatRequest
		want string // a substring of the error
	}{
		{"bad tool args JSON", openai.ChatRequest{Messages: []openai.Message{
			user, {Role: "assistant", ToolCalls: []openai.ToolCall{call("c1", "f", `{"a":`)}},
		}}, `message 1: tool call "c1" (f): arguments are not a JSON object`},
		{"tool args not an object", openai.ChatRequest{Messages: []openai.Message{
			user, {Role: "assistant", ToolCalls: []openai.ToolCall{call("c1", "f", `[1,2]`)}},
		}}, "arguments are not a JSON object"},
		{"tool call without name", openai.ChatRequest{Messages: []openai.Message{
			user, {Role: "assistant", ToolCalls: []openai.ToolCall{call("c1", "", `{}`)}},
		}}, `tool call "c1": no function name`},
		{"tool result without a matching call", openai.ChatRequest{Messages: []openai.Message{
			user,
			{Role: "assistant", ToolCalls: []openai.ToolCall{call("c1", "f", `{}`)}},
			{Role: "tool", ToolCallID: "c9", Content: openai.TextContent("42")},
		}}, `message 2: tool_call_id "c9" matches no earlier assistant tool call`},
		{"tool result before its call", openai.ChatRequest{Messages: []openai.Message{
			{Role: "tool", ToolCallID: "c1", Content: openai.TextContent("42")},
			{Role: "assistant", ToolCalls: []openai.ToolCall{call("c1", "f", `{}`)}},
		}}, `message 0: tool_call_id "c1" matches no earlier`},
		{"tool result without id", openai.ChatRequest{Messages: []openai.Message{
			{Role: "tool", Content: openai.TextContent("42")},
		}}, "tool message without tool_call_id"},
		{"unknown role", openai.ChatRequest{Messages: []openai.Message{
			{Role: "function", Content: openai.TextContent("x")},
		}}, `message 0: unknown role "function"`},
		{"unknown part type", openai.ChatRequest{Messages: []openai.Message{
			{Role: "user", Content: json.RawMessage(`[{"type":"input_audio"}]`)},
		}}, `message 0: unknown content part type "input_audio"`},
		{"image in a system message", openai.ChatRequest{Messages: []openai.Message{
			{Role: "system", Content: json.RawMessage(`[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]`)},
		}}, `content part type "image_url" is not supported here`},
		{"content neither string nor parts", openai.ChatRequest{Messages: []openai.Message{
			{Role: "user", Content: json.RawMessage(`42`)},
		}}, "message 0: content:"},
		{"data URL not base64", openai.ChatRequest{Messages: []openai.Message{
			{Role: "user", Content: json.RawMessage(`[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]`)},
		}}, "data URL must be"},
		{"image URL scheme", openai.ChatRequest{Messages: []openai.Message{
			{Role: "user", Content: json.RawMessage(`[{"type":"image_url","image_url":{"url":"ftp://x.test/a.png"}}]`)},
		}}, "want a data: or http(s) URL"},
		{"image without URL", openai.ChatRequest{Messages: []openai.Message{
			{Role: "user", Content: json.RawMessage(`[{"type":"image_url"}]`)},
		}}, "image_url: no url"},
		{"non-function tool", openai.ChatRequest{Messages: []openai.Message{user},
			Tools: []openai.Tool{{Type: "retrieval"}}}, `tool 0: unsupported type "retrieval"`},
		{"parameters not an object", openai.ChatRequest{Messages: []openai.Message{user},
			Tools: []openai.Tool{{Type: "function", Function: openai.Function{Name: "f", Parameters: json.RawMessage(`[]`)}}}},
			"tool 0 (f): parameters: not a JSON object"},
		{"unknown tool_choice", openai.ChatRequest{Messages: []openai.Message{user}, ToolChoice: json.RawMessage(`"any"`)},
			`tool_choice: unknown value "any"`},
		{"tool_choice object without name", openai.ChatRequest{Messages: []openai.Message{user},
			ToolChoice: json.RawMessage(`{"type":"function","function":{}}`)}, "tool_choice: want"},
		{"only a system message", openai.ChatRequest{Messages: []openai.Message{
			{Role: "system", Content: openai.TextContent("be brief")},
		}}, "no user, assistant or tool message with content"},
		{"stop not strings", openai.ChatRequest{Messages: []openai.Message{user}, Stop: json.RawMessage(`[1]`)},
			"stop: want a string or an array of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromChatRequest(&tt.req)
			if err == nil {
				t.Fatalf("no error; converted to %+v", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := FromChatRequest(nil); err == nil {
		t.Error("nil request: no error")
	}
}

// A tool_call_id reused in a later turn answers the latest call with that
// id, as clients that number calls per turn expect.
func TestToolResultNamesLatestCall(t *testing.T) {
	call := func(name string) openai.Message {
		return openai.Message{Role: "assistant", ToolCalls: []openai.ToolCall{
			{ID: "call_0", Type: "function", Function: openai.FunctionCall{Name: name, Arguments: "{}"}},
		}}
	}
	result := openai.Message{Role: "tool", ToolCallID: "call_0", Content: openai.TextContent("ok")}
	req := openai.ChatRequest{Messages: []openai.Message{call("first"), result, call("second"), result}}
	got, err := FromChatRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Contents[len(got.Contents)-1].Parts[0].FunctionResponse
	if last == nil || last.Name != "second" {
		t.Fatalf("last function response = %+v, want name second", last)
	}
}

// Empty turns are dropped: Gemini rejects a content without parts.
func TestEmptyTurnsDropped(t *testing.T) {
	req := openai.ChatRequest{Messages: []openai.Message{
		{Role: "user", Content: openai.TextContent("hi")},
		{Role: "assistant", Content: openai.TextContent("")},
		{Role: "user", Content: json.RawMessage(`null`)},
	}}
	got, err := FromChatRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Contents) != 1 || len(got.Contents[0].Parts) != 1 {
		t.Fatalf("contents = %+v, want the one user turn", got.Contents)
	}
	if got.GenerationConfig != nil || got.ToolConfig != nil || got.Tools != nil || got.SystemInstruction != nil {
		t.Fatalf("unset options were sent: %+v", got)
	}
}
