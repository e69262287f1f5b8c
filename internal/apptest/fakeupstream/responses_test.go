package fakeupstream_test

import (
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Responses API shapes the tests read.
type (
	responsesUsage struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		TotalTokens        int64 `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	}
	responsesItem struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Name    string `json:"name"`
		CallID  string `json:"call_id"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Arguments string `json:"arguments"`
	}
	responseObject struct {
		ID     string          `json:"id"`
		Object string          `json:"object"`
		Status string          `json:"status"`
		Model  string          `json:"model"`
		Output []responsesItem `json:"output"`
		Usage  *responsesUsage `json:"usage"`
	}
	responsesEvent struct {
		Type           string          `json:"type"`
		SequenceNumber int             `json:"sequence_number"`
		Response       *responseObject `json:"response"`
		Delta          string          `json:"delta"`
		Text           string          `json:"text"`
		Arguments      string          `json:"arguments"`
		Item           *responsesItem  `json:"item"`
	}
)

func TestResponsesJSON(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "Done.", PromptTokens: 15, CompletionTokens: 4, CachedTokens: 5})
	var got responseObject
	decode(t, send(t, s, call{path: "/v1/responses", dialect: fakeupstream.OpenAI, body: `{"model":"gpt-4.1","input":"hi"}`}), 200, &got)
	if got.Object != "response" || got.Status != "completed" || got.Model != "gpt-4.1" || len(got.Output) != 1 {
		t.Fatalf("response = %+v", got)
	}
	if o := got.Output[0]; o.Type != "message" || len(o.Content) != 1 || o.Content[0].Type != "output_text" || o.Content[0].Text != "Done." {
		t.Errorf("output = %+v", o)
	}
	if u := got.Usage; u == nil || u.InputTokens != 15 || u.OutputTokens != 4 || u.TotalTokens != 19 || u.InputTokensDetails.CachedTokens != 5 {
		t.Errorf("usage = %+v", u)
	}
}

func TestResponsesStream(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "streamed", Chunks: 2, PromptTokens: 7, CompletionTokens: 3})
	evs := cleanEvents(t, send(t, s, call{path: "/v1/responses", dialect: fakeupstream.OpenAI, body: `{"model":"gpt-4.1","input":"hi","stream":true}`}))

	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	var text string
	for i, ev := range evs {
		var e responsesEvent
		unmarshal(t, ev, &e)
		if e.Type != ev.Name || e.SequenceNumber != i {
			t.Errorf("event %q: type %q sequence_number %d, want %d", ev.Name, e.Type, e.SequenceNumber, i)
		}
		switch ev.Name {
		case "response.created":
			if e.Response == nil || e.Response.Status != "in_progress" || e.Response.Usage != nil {
				t.Errorf("created = %s", ev.Data)
			}
		case "response.output_text.delta":
			text += e.Delta
		case "response.output_text.done":
			if e.Text != "streamed" {
				t.Errorf("done text %q", e.Text)
			}
		case "response.completed":
			r := e.Response
			if r.Status != "completed" || r.Output[0].Content[0].Text != "streamed" {
				t.Errorf("completed = %s", ev.Data)
			}
			if u := r.Usage; u == nil || u.InputTokens != 7 || u.OutputTokens != 3 || u.TotalTokens != 10 {
				t.Errorf("completed usage = %+v", u)
			}
		}
	}
	if text != "streamed" {
		t.Errorf("deltas = %q", text)
	}
}

func TestResponsesStreamFunctionCall(t *testing.T) {
	s := fakeupstream.New(t)
	args := `{"q":"go"}`
	s.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "search", Arguments: args}})
	evs := cleanEvents(t, send(t, s, call{path: "/v1/responses", dialect: fakeupstream.OpenAI, body: `{"model":"gpt-4.1","input":"hi","stream":true}`}))
	var deltas, done string
	var final *responseObject
	for _, ev := range evs {
		var e responsesEvent
		unmarshal(t, ev, &e)
		switch ev.Name {
		case "response.output_item.added":
			if e.Item.Type != "function_call" || e.Item.Name != "search" || e.Item.CallID == "" || e.Item.Arguments != "" {
				t.Errorf("added = %s", ev.Data)
			}
		case "response.function_call_arguments.delta":
			deltas += e.Delta
		case "response.function_call_arguments.done":
			done = e.Arguments
		case "response.completed":
			final = e.Response
		}
	}
	if deltas != args || done != args || final == nil || final.Output[0].Arguments != args || final.Output[0].Type != "function_call" {
		t.Errorf("deltas %q done %q final %+v", deltas, done, final)
	}
}
