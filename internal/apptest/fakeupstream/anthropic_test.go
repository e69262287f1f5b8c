package fakeupstream_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Anthropic shapes the tests read; the relay's own types live in
// internal/relay/anthropic.
type (
	anthropicUsage struct {
		InputTokens              *int64 `json:"input_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
	}
	anthropicBlock struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	anthropicMessage struct {
		ID         string           `json:"id"`
		Type       string           `json:"type"`
		Role       string           `json:"role"`
		Model      string           `json:"model"`
		Content    []anthropicBlock `json:"content"`
		StopReason *string          `json:"stop_reason"`
		Usage      *anthropicUsage  `json:"usage"`
	}
	anthropicEvent struct {
		Type         string            `json:"type"`
		Message      *anthropicMessage `json:"message"`
		Index        *int              `json:"index"`
		ContentBlock *anthropicBlock   `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage *anthropicUsage `json:"usage"`
	}
	anthropicError struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

const messagesBody = `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`

func messagesStreamBody() string {
	return `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
}

func value(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestMessagesJSON pins the usage mapping: Anthropic's input_tokens leaves
// out the cached prompt tokens.
func TestMessagesJSON(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "Bonjour", PromptTokens: 100, CachedTokens: 60, CompletionTokens: 9})
	var got anthropicMessage
	decode(t, send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesBody}), 200, &got)
	if got.Type != "message" || got.Role != "assistant" || got.Model != "claude-sonnet-4-5" || got.StopReason == nil || *got.StopReason != "end_turn" {
		t.Errorf("message = %+v", got)
	}
	if len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != "Bonjour" {
		t.Errorf("content = %+v", got.Content)
	}
	u := got.Usage
	if u == nil || value(u.InputTokens) != 40 || value(u.CacheReadInputTokens) != 60 || value(u.CacheCreationInputTokens) != 0 || value(u.OutputTokens) != 9 {
		t.Errorf("usage = %+v", u)
	}
	if r := s.LastRequest(); r.Dialect != fakeupstream.Anthropic || r.Model != "claude-sonnet-4-5" || r.Key != fakeupstream.DefaultKey {
		t.Errorf("recorded %+v", r)
	}
}

func TestMessagesStream(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "Hello world", Chunks: 2, PromptTokens: 50, CachedTokens: 20, CompletionTokens: 11})
	evs := cleanEvents(t, send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()}))

	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	parsed := make([]anthropicEvent, len(evs))
	for i, ev := range evs {
		unmarshal(t, ev, &parsed[i])
		if parsed[i].Type != ev.Name {
			t.Errorf("event %q has type %q", ev.Name, parsed[i].Type)
		}
	}
	start := parsed[0].Message
	if start == nil || start.Model != "claude-sonnet-4-5" || start.StopReason != nil || len(start.Content) != 0 {
		t.Fatalf("message_start = %s", evs[0].Data)
	}
	if u := start.Usage; u == nil || value(u.InputTokens) != 30 || value(u.CacheReadInputTokens) != 20 || value(u.OutputTokens) != 1 {
		t.Errorf("message_start usage = %s", evs[0].Data)
	}
	if b := parsed[1].ContentBlock; b == nil || b.Type != "text" || *parsed[1].Index != 0 {
		t.Errorf("content_block_start = %s", evs[1].Data)
	}
	var text string
	for _, e := range parsed[3:5] {
		if e.Delta.Type != "text_delta" {
			t.Errorf("delta type %q", e.Delta.Type)
		}
		text += e.Delta.Text
	}
	if text != "Hello world" {
		t.Errorf("text = %q", text)
	}
	md := parsed[6]
	if md.Delta.StopReason != "end_turn" || md.Usage == nil || value(md.Usage.OutputTokens) != 11 {
		t.Errorf("message_delta = %s", evs[6].Data)
	}
}

func TestMessagesStreamToolUseAndOmitUsage(t *testing.T) {
	s := fakeupstream.New(t)
	args := `{"query":"weather in Paris"}`
	s.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "search", Arguments: args}, OmitUsage: true})
	evs := cleanEvents(t, send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()}))

	var partial, stop string
	for _, ev := range evs {
		var e anthropicEvent
		unmarshal(t, ev, &e)
		if e.Usage != nil || (e.Message != nil && e.Message.Usage != nil) {
			t.Errorf("usage despite OmitUsage: %s", ev.Data)
		}
		switch ev.Name {
		case "content_block_start":
			if b := e.ContentBlock; b.Type != "tool_use" || b.Name != "search" || b.ID == "" || string(b.Input) != "{}" {
				t.Errorf("content_block_start = %s", ev.Data)
			}
		case "content_block_delta":
			if e.Delta.Type != "input_json_delta" {
				t.Errorf("delta = %s", ev.Data)
			}
			partial += e.Delta.PartialJSON
		case "message_delta":
			stop = e.Delta.StopReason
		}
	}
	if partial != args || stop != "tool_use" {
		t.Errorf("partial_json %q stop_reason %q", partial, stop)
	}

	var msg anthropicMessage
	decode(t, send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesBody}), 200, &msg)
	if msg.Usage != nil || *msg.StopReason != "tool_use" || msg.Content[0].Type != "tool_use" || string(msg.Content[0].Input) != args {
		t.Errorf("JSON tool use = %+v", msg)
	}
}

// TestMessagesChecks pins the checks a converted request meets first at
// Anthropic: the version header and the required fields.
func TestMessagesChecks(t *testing.T) {
	s := fakeupstream.New(t)
	for _, c := range []struct {
		body    string
		header  http.Header
		message string
	}{
		{messagesBody, http.Header{"Anthropic-Version": {""}}, "anthropic-version: header is required"},
		{`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`, nil, "max_tokens: Field required"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, "model: Field required"},
		{`{"model":"claude-sonnet-4-5","max_tokens":5}`, nil, "messages: Field required"},
	} {
		var got anthropicError
		decode(t, send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: c.body, header: c.header}), http.StatusBadRequest, &got)
		if got.Type != "error" || got.Error.Type != "invalid_request_error" || got.Error.Message != c.message {
			t.Errorf("%s: %+v, want %q", c.body, got, c.message)
		}
	}
	if s.Count() != 4 {
		t.Errorf("Count() = %d, want 4 (refused requests are recorded)", s.Count())
	}
}

// UsageDelay holds back only the event with the final usage: OpenAI's
// usage chunk, Anthropic's message_delta.
func TestUsageDelay(t *testing.T) {
	for _, c := range []call{
		{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatStreamBody(true)},
		{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()},
	} {
		s := fakeupstream.New(t)
		s.SetBehavior(fakeupstream.Behavior{UsageDelay: 300 * time.Millisecond, CompletionTokens: 5000})
		resp := send(t, s, c)
		rd := sse.NewReader(resp.Body, 1<<20)
		last := time.Now()
		for {
			ev, err := rd.Next()
			if err != nil {
				t.Fatalf("%s: stream ended without the usage event: %v", c.dialect, err)
			}
			gap := time.Since(last)
			last = time.Now()
			final := ev.Name == "message_delta" || (c.dialect == fakeupstream.OpenAI && bytes.Contains(ev.Data, []byte(`"usage":{`)))
			if final != (gap >= 250*time.Millisecond) {
				t.Fatalf("%s: event %q came %v after the previous one", c.dialect, ev.Data, gap)
			}
			if final {
				if !bytes.Contains(ev.Data, []byte(`5000`)) {
					t.Fatalf("%s: usage event %s", c.dialect, ev.Data)
				}
				break
			}
		}
		resp.Body.Close()
	}
}

// TestCountTokens: POST /v1/messages/count_tokens answers {"input_tokens"}
// with the whole prompt, needs no max_tokens, and checks like /v1/messages.
func TestCountTokens(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{PromptTokens: 100, CachedTokens: 60})
	var got struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`
	decode(t, send(t, s, call{path: "/v1/messages/count_tokens", dialect: fakeupstream.Anthropic, body: body}), 200, &got)
	if value(got.InputTokens) != 100 {
		t.Errorf("input_tokens = %d, want 100", value(got.InputTokens))
	}
	if r := s.LastRequest(); r.Dialect != fakeupstream.Anthropic || r.Model != "claude-sonnet-4-5" || r.Path != "/v1/messages/count_tokens" {
		t.Errorf("recorded %+v", r)
	}
	var refused anthropicError
	decode(t, send(t, s, call{path: "/v1/messages/count_tokens", dialect: fakeupstream.Anthropic, body: `{"model":"claude-sonnet-4-5"}`}),
		http.StatusBadRequest, &refused)
	if refused.Type != "error" || refused.Error.Message != "messages: Field required" {
		t.Errorf("without messages: %+v", refused)
	}
	var bad anthropicError
	decode(t, send(t, s, call{path: "/v1/messages/count_tokens", dialect: fakeupstream.Anthropic, key: "wrong", body: body}),
		http.StatusUnauthorized, &bad)
	if bad.Error.Type != "authentication_error" {
		t.Errorf("wrong key: %+v", bad)
	}
}
