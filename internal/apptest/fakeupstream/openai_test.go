package fakeupstream_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

func chatStreamBody(includeUsage bool) string {
	if includeUsage {
		return `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	}
	return `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
}

func TestChatJSON(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "Hi there", PromptTokens: 30, CompletionTokens: 7, CachedTokens: 10})
	var got openai.ChatResponse
	decode(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatBody}), 200, &got)

	if got.Object != "chat.completion" || got.Model != "gpt-4o-mini" || !strings.HasPrefix(got.ID, "chatcmpl-") {
		t.Errorf("object %q model %q id %q", got.Object, got.Model, got.ID)
	}
	if len(got.Choices) != 1 || string(got.Choices[0].Message.Content) != `"Hi there"` || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("choices = %+v", got.Choices)
	}
	if u := got.Usage; u == nil || u.PromptTokens != 30 || u.CompletionTokens != 7 || u.TotalTokens != 37 || u.Cached() != 10 {
		t.Errorf("usage = %+v, want 30 + 7 = 37, 10 cached", u)
	}

	r := s.LastRequest()
	if r.Dialect != fakeupstream.OpenAI || r.Model != "gpt-4o-mini" || r.Stream || r.Key != fakeupstream.DefaultKey ||
		r.Path != "/v1/chat/completions" || string(r.Body) != chatBody || r.Header.Get("Authorization") != "Bearer upstream-key" {
		t.Errorf("recorded %+v", r)
	}
}

func TestChatJSONToolCallAndOmitUsage(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}, OmitUsage: true})
	resp := send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatBody})
	var got openai.ChatResponse
	decode(t, resp, 200, &got)
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || string(c.Message.Content) != "null" || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("choice = %+v", c)
	}
	tc := c.Message.ToolCalls[0]
	if tc.Type != "function" || tc.ID == "" || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("tool call = %+v", tc)
	}
	if got.Usage != nil {
		t.Errorf("usage = %+v, want none", got.Usage)
	}
}

// TestChatStreamUsageChunk pins OpenAI's rule: the usage chunk (empty
// choices) comes after the finish chunk and before [DONE], and only when the
// request asked for it.
func TestChatStreamUsageChunk(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		s := fakeupstream.New(t)
		s.SetBehavior(fakeupstream.Behavior{Reply: "abcdefghi", Chunks: 3, PromptTokens: 20, CompletionTokens: 5, CachedTokens: 4})
		evs := cleanEvents(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatStreamBody(includeUsage)}))

		if last := evs[len(evs)-1]; string(last.Data) != "[DONE]" || last.Name != "" {
			t.Fatalf("last event %q %q, want [DONE]", last.Name, last.Data)
		}
		chunks := make([]openai.ChatChunk, len(evs)-1)
		for i := range chunks {
			unmarshal(t, evs[i], &chunks[i])
		}
		// role, 3 deltas, finish (+ usage)
		if want := 5 + map[bool]int{true: 1}[includeUsage]; len(chunks) != want {
			t.Fatalf("include_usage=%v: %d chunks, want %d", includeUsage, len(chunks), want)
		}
		if chunks[0].Choices[0].Delta.Role != "assistant" {
			t.Errorf("first delta = %+v", chunks[0].Choices[0].Delta)
		}
		var text string
		for _, c := range chunks[1:4] {
			if c.Choices[0].Delta.Content == nil || *c.Choices[0].Delta.Content == "" || c.Choices[0].FinishReason != nil {
				t.Fatalf("content chunk = %+v", c.Choices[0])
			}
			text += *c.Choices[0].Delta.Content
		}
		if text != "abcdefghi" {
			t.Errorf("text = %q", text)
		}
		if f := chunks[4].Choices[0].FinishReason; f == nil || *f != "stop" || chunks[4].Usage != nil {
			t.Errorf("finish chunk = %+v", chunks[4])
		}
		for i, c := range chunks[:5] {
			if c.Usage != nil || c.Object != "chat.completion.chunk" || c.Model != "gpt-4o-mini" || c.ID != chunks[0].ID {
				t.Errorf("chunk %d = %+v", i, c)
			}
		}
		if !includeUsage {
			for _, ev := range evs {
				if bytes.Contains(ev.Data, []byte(`"usage"`)) {
					t.Errorf("usage without include_usage: %s", ev.Data)
				}
			}
			continue
		}
		u := chunks[5]
		if !bytes.Contains(evs[5].Data, []byte(`"choices":[]`)) || len(u.Choices) != 0 {
			t.Errorf("usage chunk %s, want choices: []", evs[5].Data)
		}
		if u.Usage == nil || u.Usage.PromptTokens != 20 || u.Usage.CompletionTokens != 5 || u.Usage.TotalTokens != 25 || u.Usage.Cached() != 4 {
			t.Errorf("usage = %+v", u.Usage)
		}
	}
}

func TestChatStreamToolCallAndOmitUsage(t *testing.T) {
	s := fakeupstream.New(t)
	args := `{"city":"Paris","unit":"celsius"}`
	s.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "get_weather", Arguments: args}, Chunks: 4, OmitUsage: true})
	evs := cleanEvents(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatStreamBody(true)}))

	var got, name, id string
	var finish string
	for _, ev := range evs[:len(evs)-1] {
		var c openai.ChatChunk
		unmarshal(t, ev, &c)
		if c.Usage != nil || len(c.Choices) == 0 {
			t.Fatalf("chunk with usage or without choices despite OmitUsage: %s", ev.Data)
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Errorf("tool call delta without index 0: %s", ev.Data)
			}
			name += tc.Function.Name
			id += tc.ID
			got += tc.Function.Arguments
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if got != args || name != "get_weather" || id == "" || finish != "tool_calls" {
		t.Errorf("arguments %q name %q id %q finish %q", got, name, id, finish)
	}
	if n := len(evs); n != 1+4+1+1 {
		t.Errorf("%d events, want role, 4 argument deltas, finish, [DONE]", n)
	}
}

func TestCompletions(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "once upon", PromptTokens: 3, CompletionTokens: 2})
	var got struct {
		Object  string
		Model   string
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage openai.Usage
	}
	decode(t, send(t, s, call{path: "/v1/completions", dialect: fakeupstream.OpenAI, body: `{"model":"gpt-3.5-turbo-instruct","prompt":"tell"}`}), 200, &got)
	if got.Object != "text_completion" || got.Model != "gpt-3.5-turbo-instruct" || got.Choices[0].Text != "once upon" ||
		got.Choices[0].FinishReason != "stop" || got.Usage.TotalTokens != 5 {
		t.Errorf("completion = %+v", got)
	}

	evs := cleanEvents(t, send(t, s, call{path: "/v1/completions", dialect: fakeupstream.OpenAI,
		body: `{"model":"gpt-3.5-turbo-instruct","prompt":"tell","stream":true,"stream_options":{"include_usage":true}}`}))
	var text string
	for _, ev := range evs[:len(evs)-2] {
		var c struct{ Choices []struct{ Text string } }
		unmarshal(t, ev, &c)
		text += c.Choices[0].Text
	}
	var last openai.ChatChunk
	unmarshal(t, evs[len(evs)-2], &last)
	if text != "once upon" || string(evs[len(evs)-1].Data) != "[DONE]" || last.Usage == nil || last.Usage.TotalTokens != 5 || len(last.Choices) != 0 {
		t.Errorf("text %q, last two events %s %s", text, evs[len(evs)-2].Data, evs[len(evs)-1].Data)
	}
}

func TestChatRequiresModelAndMessages(t *testing.T) {
	s := fakeupstream.New(t)
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"hi"}]}`: "you must provide a model parameter",
		`{"model":"gpt-4o"}`:                            "'messages' is a required property",
		`{"model":`:                                     "We could not parse the JSON body of your request.",
	} {
		var got openai.ErrorBody
		decode(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: body}), http.StatusBadRequest, &got)
		if !strings.HasPrefix(got.Error.Message, want) || got.Error.Type != "invalid_request_error" {
			t.Errorf("%s: error = %+v, want %q", body, got.Error, want)
		}
	}
}
