package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

func TestFromChatRequestInvalid(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	tests := []struct{ name, req, want string }{
		{"bad tool arguments JSON", `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}]}`,
			"message 1: tool call c1: arguments are not valid JSON"},
		{"tool arguments not an object", `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
			"message 1: tool call c1: arguments are not a JSON object"},
		{"tool call without id", `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
			"message 1: tool call without id"},
		{"unknown role", `{"messages":[{"role":"function","content":"x"}]}`, `message 0: unknown role "function"`},
		{"unknown content part type", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`,
			`message 0: unknown content part type "input_audio"`},
		{"image part in system", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			`message 0: content part type "image_url" not allowed here`},
		{"image_url without url object", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "image_url part without image_url"},
		{"image URL scheme", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`,
			"want a data: or http(s) URL"},
		{"data URL not base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`,
			"image data URL must be data:<media type>;base64,<data>"},
		{"content neither string nor parts", `{"messages":[{"role":"user","content":42}]}`, "message 0: decode content"},
		{"tool message without id", `{"messages":[` + user + `,{"role":"tool","content":"x"}]}`, "message 1: tool message without tool_call_id"},
		{"stop not strings", `{"messages":[` + user + `],"stop":7}`, "stop:"},
		{"max_tokens zero", `{"messages":[` + user + `],"max_tokens":0}`, "max_tokens 0: must be at least 1"},
		{"tool type", `{"messages":[` + user + `],"tools":[{"type":"code_interpreter"}]}`, `tool 0: unknown type "code_interpreter"`},
		{"tool without name", `{"messages":[` + user + `],"tools":[{"type":"function","function":{}}]}`, "tool 0: no function name"},
		{"tool_choice string", `{"messages":[` + user + `],"tool_choice":"sometimes"}`, `tool_choice: unknown value "sometimes"`},
		{"tool_choice object", `{"messages":[` + user + `],"tool_choice":{"type":"function"}}`, "tool_choice: want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req openai.ChatRequest
			if err := json.Unmarshal([]byte(tt.req), &req); err != nil {
				t.Fatal(err)
			}
			_, err := FromChatRequest(&req, "claude")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestToChatRequestInvalid(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	tests := []struct{ name, req, want string }{
		{"unknown role", `{"messages":[{"role":"system","content":"x"}]}`, `message 0: unknown role "system"`},
		{"unknown block type", `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64"}}]}]}`,
			`message 0: unknown content block type "document"`},
		{"unknown assistant block", `{"messages":[` + user + `,{"role":"assistant","content":[{"type":"server_tool_use"}]}]}`,
			`message 1: unknown content block type "server_tool_use"`},
		{"image source type", `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`,
			`unknown image source type "file"`},
		{"image without source", `{"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "image block without source"},
		{"tool_result block", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}]}]}`,
			`tool_result t: unknown content block type "document"`},
		{"tool_result without id", `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "tool_result without tool_use_id"},
		{"system image", `{"system":[{"type":"image"}],"messages":[` + user + `]}`, `system: content block type "image" not allowed here`},
		{"server tool", `{"messages":[` + user + `],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
			`tool "web_search": server tool type "web_search_20250305" has no OpenAI equivalent`},
		{"tool_choice type", `{"messages":[` + user + `],"tool_choice":{"type":"sometimes"}}`, `tool_choice: unknown type "sometimes"`},
		{"tool_choice tool without name", `{"messages":[` + user + `],"tool_choice":{"type":"tool"}}`, "tool_choice: type tool without name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req Request
			if err := json.Unmarshal([]byte(tt.req), &req); err != nil {
				t.Fatal(err)
			}
			_, err := ToChatRequest(&req, "gpt")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestContentDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    Content
		wantErr bool
	}{
		{`"hi"`, Content{{Type: BlockText, Text: "hi"}}, false},
		{`[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x"}}]`,
			Content{{Type: BlockText, Text: "a"}, {Type: BlockImage, Source: &ImageSource{Type: SourceURL, URL: "https://x"}}}, false},
		{`null`, nil, false},
		{`7`, nil, true},
	}
	for _, tt := range tests {
		var got Content
		err := json.Unmarshal([]byte(tt.in), &got)
		if (err != nil) != tt.wantErr || !jsonEqual(t, got, tt.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(x) == string(y)
}

func TestEndpoint(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.anthropic.com", "https://api.anthropic.com/v1/messages"},
		{"https://proxy.example.com/v1", "https://proxy.example.com/v1/messages"},
		{"https://proxy.example.com/anthropic", "https://proxy.example.com/anthropic/v1/messages"},
		{"https://proxy.example.com/v10", "https://proxy.example.com/v10/v1/messages"},
	}
	for _, tt := range tests {
		if got := Endpoint(tt.base); got != tt.want {
			t.Errorf("Endpoint(%q) = %q, want %q", tt.base, got, tt.want)
		}
	}
}
