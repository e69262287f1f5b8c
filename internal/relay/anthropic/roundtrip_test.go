package anthropic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// An OpenAI request sent through an Anthropic ingress and back must mean
// the same: messages, tools, stop words, limits and sampling.
func TestChatRequestRoundTrip(t *testing.T) {
	tests := []struct{ name, req string }{
		{"system and developer", `{"messages":[{"role":"system","content":"Be terse."},
			{"role":"developer","content":[{"type":"text","text":"French only."}]},
			{"role":"user","content":"Capital of Italy?"}],"max_tokens":50}`},
		{"tool conversation with images", `{"messages":[
			{"role":"user","content":[{"type":"text","text":"Look:"},
				{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
				{"type":"image_url","image_url":{"url":"http://example.com/a.png"}}]},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Oslo\"}"}},
				{"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]},
			{"role":"tool","tool_call_id":"call_1","content":"-3C"},
			{"role":"tool","tool_call_id":"call_2","content":"09:00"},
			{"role":"assistant","tool_calls":[{"id":"call_3","type":"function","function":{"name":"time","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_3","content":"09:01"},
			{"role":"user","content":"Thanks. Summarise."}],
			"tools":[{"type":"function","function":{"name":"weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
				{"type":"function","function":{"name":"time"}}],
			"tool_choice":"auto","max_completion_tokens":700}`},
		{"stop string, default max_tokens", `{"messages":[{"role":"user","content":"Count."}],"stop":"7","temperature":0.3,"top_p":0.8}`},
		{"stop array", `{"messages":[{"role":"user","content":"Count."}],"stop":["5","six"],"max_tokens":10}`},
		{"tool_choice required", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`},
		{"tool_choice none", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"}`},
		{"tool_choice function", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{"same-role turns merge", `{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]},
			{"role":"assistant","content":""},{"role":"assistant","content":"c"},{"role":"user","content":"d"}],"stream":true,"user":"u1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var orig openai.ChatRequest
			if err := json.Unmarshal([]byte(tt.req), &orig); err != nil {
				t.Fatal(err)
			}
			a, err := FromChatRequest(&orig, "claude")
			if err != nil {
				t.Fatal(err)
			}
			back, err := ToChatRequest(a, "gpt")
			if err != nil {
				t.Fatal(err)
			}
			want, got := normalizeRequest(t, &orig), normalizeRequest(t, back)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("round trip changed the request:\n%s", firstDiff(string(w), string(g)))
			}
		})
	}
}

// normalRequest is what a chat request means, written one way: system text
// joined, consecutive turns of one role merged, empty text dropped,
// arguments and schemas compacted, defaults filled in.
type normalRequest struct {
	Messages    []normalMessage
	Tools       []openai.Function
	ToolChoice  string
	Stop        []string
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	Stream      bool
	User        string
}

type normalMessage struct {
	Role       string
	Parts      []openai.ContentPart
	Calls      []openai.FunctionCall
	CallIDs    []string
	ToolCallID string
}

func normalizeRequest(t *testing.T, r *openai.ChatRequest) normalRequest {
	t.Helper()
	n := normalRequest{MaxTokens: DefaultMaxTokens, Temperature: r.Temperature, TopP: r.TopP, Stream: r.Stream, User: r.User}
	switch {
	case r.MaxCompletionTokens != nil:
		n.MaxTokens = *r.MaxCompletionTokens
	case r.MaxTokens != nil:
		n.MaxTokens = *r.MaxTokens
	}
	var system []string
	for _, m := range r.Messages {
		parts, err := openai.Parts(m.Content)
		if err != nil {
			t.Fatal(err)
		}
		var kept []openai.ContentPart
		for _, p := range parts {
			if p.Type != "text" || p.Text != "" {
				kept = append(kept, p)
			}
		}
		if m.Role == "system" || m.Role == "developer" {
			for _, p := range kept {
				system = append(system, p.Text)
			}
			continue
		}
		nm := normalMessage{Role: m.Role, Parts: kept, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			nm.CallIDs = append(nm.CallIDs, c.ID)
			nm.Calls = append(nm.Calls, openai.FunctionCall{Name: c.Function.Name, Arguments: compactOr(c.Function.Arguments, "{}")})
		}
		last := len(n.Messages) - 1
		switch {
		case nm.Parts == nil && nm.Calls == nil && m.Role != "tool":
		case last >= 0 && m.Role != "tool" && n.Messages[last].Role == m.Role:
			n.Messages[last].Parts = append(n.Messages[last].Parts, nm.Parts...)
			n.Messages[last].Calls = append(n.Messages[last].Calls, nm.Calls...)
			n.Messages[last].CallIDs = append(n.Messages[last].CallIDs, nm.CallIDs...)
		default:
			n.Messages = append(n.Messages, nm)
		}
	}
	if system != nil {
		n.Messages = append([]normalMessage{{Role: "system", Parts: []openai.ContentPart{{Type: "text", Text: strings.Join(system, "\n\n")}}}}, n.Messages...)
	}
	for _, tool := range r.Tools {
		f := tool.Function
		f.Parameters = json.RawMessage(compactOr(string(f.Parameters), `{"type":"object"}`))
		n.Tools = append(n.Tools, f)
	}
	n.ToolChoice = compactOr(string(r.ToolChoice), "")
	stop, err := openai.StopWords(r.Stop)
	if err != nil {
		t.Fatal(err)
	}
	n.Stop = stop
	return n
}

func compactOr(s, empty string) string {
	if strings.TrimSpace(s) == "" || s == "null" {
		return empty
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return s
	}
	return buf.String()
}

// An Anthropic response sent to an OpenAI client and back keeps its text,
// tool calls, stop reason and billed usage.
func TestResponseRoundTrip(t *testing.T) {
	tests := []struct{ name, resp string }{
		{"text and tools", `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[
			{"type":"text","text":"Sure."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}}`},
		{"length", `{"id":"msg_2","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Long"}],
			"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":1}}`},
		{"cache write", `{"id":"msg_3","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hi"}],
			"stop_reason":"end_turn","usage":{"input_tokens":5,"cache_creation_input_tokens":2000,"output_tokens":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var orig Response
			if err := json.Unmarshal([]byte(tt.resp), &orig); err != nil {
				t.Fatal(err)
			}
			back := FromChatResponse(ToChatResponse(&orig, "", 1), "")
			if !reflect.DeepEqual(back.Content, orig.Content) || *back.StopReason != *orig.StopReason || back.Model != orig.Model {
				t.Errorf("got %+v %s %s, want %+v %s %s", back.Content, *back.StopReason, back.Model, orig.Content, *orig.StopReason, orig.Model)
			}
			if got, want := UsageOf(back), UsageOf(&orig); !reflect.DeepEqual(got, want) {
				t.Errorf("usage %+v, want %+v", got, want)
			}
		})
	}
}
