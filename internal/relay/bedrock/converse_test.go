package bedrock_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

func converseBody(t *testing.T, chat string) []byte {
	t.Helper()
	var req openai.ChatRequest
	if err := json.Unmarshal([]byte(chat), &req); err != nil {
		t.Fatal(err)
	}
	c, err := bedrock.FromChatRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const toolChat = `{"model":"nova","max_tokens":300,"temperature":0.2,"top_p":0.9,"stop":["END"],
 "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Paris?"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"user","content":"and tomorrow?"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
 "tool_choice":"required"}`

func TestConverse(t *testing.T) {
	e := newEnv(t, "")
	e.backend.SetBehavior(fakeupstream.Behavior{PromptTokens: 50, CachedTokens: 20, CacheWriteTokens: 5, CompletionTokens: 9})
	resp := do(t, e.channel(t, goodKey()), bedrock.Converse, "amazon.nova-pro-v1:0", converseBody(t, toolChat))
	b := readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var cr bedrock.ConverseResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		t.Fatal(err)
	}
	chat, err := bedrock.ToChatResponse(&cr, "nova", "chatcmpl-1", 7)
	if err != nil {
		t.Fatal(err)
	}
	u := chat.Usage
	if u.PromptTokens != 50 || u.Cached() != 20 || u.CacheWriteTokens != 5 || u.CompletionTokens != 9 || u.TotalTokens != 59 {
		t.Fatalf("usage %+v", u)
	}
	if string(chat.Choices[0].Message.Content) != `"`+fakeupstream.DefaultReply+`"` || chat.Choices[0].FinishReason != "stop" {
		t.Fatalf("choice %+v", chat.Choices[0])
	}
	// What the backend got proves the fields went where Converse wants them.
	var sent struct {
		MaxTokens     int                     `json:"max_tokens"`
		Temperature   float64                 `json:"temperature"`
		TopP          float64                 `json:"top_p"`
		StopSequences []string                `json:"stop_sequences"`
		System        string                  `json:"system"`
		ToolChoice    struct{ Type string }   `json:"tool_choice"`
		Messages      []struct{ Role string } `json:"messages"`
	}
	_ = json.Unmarshal(e.backend.LastRequest().Body, &sent)
	if sent.MaxTokens != 300 || sent.Temperature != 0.2 || sent.TopP != 0.9 || sent.StopSequences[0] != "END" ||
		sent.System != "be brief" || sent.ToolChoice.Type != "any" || len(sent.Messages) != 3 {
		t.Fatalf("backend got %s", e.backend.LastRequest().Body)
	}
}

func TestConverseToolCallAndStream(t *testing.T) {
	e := newEnv(t, "")
	call := &fakeupstream.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}
	e.backend.SetBehavior(fakeupstream.Behavior{ToolCall: call, PromptTokens: 40, CompletionTokens: 11})
	c := e.channel(t, goodKey())

	resp := do(t, c, bedrock.Converse, "amazon.nova-pro-v1:0", converseBody(t, toolChat))
	var cr bedrock.ConverseResponse
	_ = json.Unmarshal(readAll(t, resp), &cr)
	chat, err := bedrock.ToChatResponse(&cr, "nova", "id", 1)
	if err != nil {
		t.Fatal(err)
	}
	tc := chat.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris","days":2}` || tc[0].ID == "" ||
		chat.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("answer %+v", chat.Choices[0])
	}

	resp = do(t, c, bedrock.ConverseStream, "amazon.nova-pro-v1:0", converseBody(t, toolChat))
	frames := bedrock.NewStreamReader(resp.Body, 1<<20)
	s := bedrock.NewChatStream("nova", "id", 1)
	var args strings.Builder
	var id, finish string
	for {
		f, err := frames.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := s.Convert(f.EventType, f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunks {
			for _, d := range ch.Choices[0].Delta.ToolCalls {
				if d.ID != "" {
					id = d.ID
				}
				args.WriteString(d.Function.Arguments)
			}
			if fr := ch.Choices[0].FinishReason; fr != nil {
				finish = *fr
			}
		}
	}
	if !s.Done() || !s.HasUsage() || id == "" || args.String() != `{"city":"Paris","days":2}` || finish != "tool_calls" {
		t.Fatalf("done %v usage %v id %q args %q finish %q", s.Done(), s.HasUsage(), id, args.String(), finish)
	}
	if u := s.UsageChunk().Usage; u.PromptTokens != 40 || u.CompletionTokens != 11 {
		t.Fatalf("usage %+v", u)
	}
}

func TestConverseStreamText(t *testing.T) {
	e := newEnv(t, "")
	e.backend.SetBehavior(fakeupstream.Behavior{Reply: "alpha beta gamma", Chunks: 3, PromptTokens: 5, CompletionTokens: 3})
	resp := do(t, e.channel(t, goodKey()), bedrock.ConverseStream, "meta.llama3-70b-instruct-v1:0",
		converseBody(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	frames := bedrock.NewStreamReader(resp.Body, 1<<20)
	s := bedrock.NewChatStream("m", "id", 1)
	var text strings.Builder
	for {
		f, err := frames.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := s.Convert(f.EventType, f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunks {
			if c := ch.Choices[0].Delta.Content; c != nil {
				text.WriteString(*c)
			}
		}
	}
	if text.String() != "alpha beta gamma" || s.Usage().TotalTokens != 8 {
		t.Fatalf("text %q usage %+v", text.String(), s.Usage())
	}
}
