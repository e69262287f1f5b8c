package anthropic

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// checkEvents replays events the way an Anthropic SDK accumulates them and
// fails on anything it would choke on: a type field that is not the event
// name, blocks out of order, deltas of the wrong kind, empty text blocks,
// tool inputs that are not JSON objects, a missing start or stop.
func checkEvents(t *testing.T, events []sse.Event) {
	t.Helper()
	if len(events) < 3 || events[0].Name != EventMessageStart ||
		events[len(events)-2].Name != EventMessageDelta || events[len(events)-1].Name != EventMessageStop {
		t.Fatalf("want message_start … message_delta, message_stop; got %v", names(events))
	}
	var (
		blocks  []Block
		open    = -1
		partial string
	)
	for i, ev := range events {
		var head struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}
		if err := json.Unmarshal(ev.Data, &head); err != nil || head.Type != ev.Name {
			t.Fatalf("event %d %s: type %q (%v)", i, ev.Name, head.Type, err)
		}
		switch ev.Name {
		case EventContentBlockStart:
			var e ContentBlockStart
			mustDecode(t, ev.Data, &e)
			if open != -1 || e.Index != len(blocks) {
				t.Fatalf("event %d: block %d starts while %d open, %d done", i, e.Index, open, len(blocks))
			}
			blocks, open, partial = append(blocks, e.ContentBlock), e.Index, ""
		case EventContentBlockDelta:
			var e ContentBlockDelta
			mustDecode(t, ev.Data, &e)
			if e.Index != open {
				t.Fatalf("event %d: delta for block %d, open %d", i, e.Index, open)
			}
			switch b := &blocks[open]; {
			case b.Type == BlockText && e.Delta.Type == DeltaText:
				b.Text += e.Delta.Text
			case b.Type == BlockToolUse && e.Delta.Type == DeltaInputJSON:
				partial += e.Delta.PartialJSON
			default:
				t.Fatalf("event %d: %s into a %s block", i, e.Delta.Type, b.Type)
			}
		case EventContentBlockStop:
			if head.Index != open {
				t.Fatalf("event %d: stop of block %d, open %d", i, head.Index, open)
			}
			checkBlock(t, blocks[open], partial)
			open = -1
		case EventMessageDelta:
			if open != -1 {
				t.Fatalf("message_delta with block %d open", open)
			}
		}
	}
}

func checkBlock(t *testing.T, b Block, partial string) {
	t.Helper()
	switch b.Type {
	case BlockText:
		if b.Text == "" {
			t.Error("empty text block")
		}
	case BlockToolUse:
		if partial == "" {
			partial = "{}"
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(partial), &obj); err != nil || b.ID == "" || b.Name == "" {
			t.Errorf("tool_use %s %s: input %q: %v", b.ID, b.Name, partial, err)
		}
	}
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func names(events []sse.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Name
	}
	return out
}

func TestChatStreamErrors(t *testing.T) {
	tests := []struct {
		name string
		ev   sse.Event
		want string // a *StreamError's type, or "" for a decode error
	}{
		{"error event", sse.Event{Name: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}, "overloaded_error"},
		{"error without event line", sse.Event{Data: []byte(`{"type":"error","error":{"type":"api_error","message":"boom"}}`)}, "api_error"},
		{"broken JSON", sse.Event{Name: EventContentBlockDelta, Data: []byte(`{"type":`)}, ""},
		{"no name, no JSON", sse.Event{Data: []byte(`[DONE]`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewChatStream("m", 0).Convert(tt.ev)
			var se *StreamError
			switch {
			case err == nil:
				t.Fatal("no error")
			case tt.want == "" && errors.As(err, &se):
				t.Fatalf("decode failure reported as stream error %v", err)
			case tt.want != "" && (!errors.As(err, &se) || se.Type != tt.want):
				t.Fatalf("got %v, want a StreamError of type %s", err, tt.want)
			}
		})
	}
}

func TestChatStreamIgnoresUnknownEvents(t *testing.T) {
	s := NewChatStream("m", 0)
	for _, ev := range []sse.Event{
		{Name: EventPing, Data: []byte(`{"type":"ping"}`)},
		{Name: "future_event", Data: []byte(`{"type":"future_event","x":1}`)},
	} {
		chunks, err := s.Convert(ev)
		if err != nil || len(chunks) != 0 {
			t.Errorf("%s: chunks %v, err %v", ev.Name, chunks, err)
		}
	}
	if s.Done() {
		t.Error("done without message_stop")
	}
}

// A stream cut before message_stop is not Done, and its usage is what was
// reported so far (message_start's), for billing what was produced.
func TestChatStreamTruncated(t *testing.T) {
	s := NewChatStream("m", 0)
	start := `{"type":"message_start","message":{"id":"msg","type":"message","role":"assistant","model":"c","content":[],` +
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`
	if err := s.Observe(sse.Event{Name: EventMessageStart, Data: []byte(start)}); err != nil {
		t.Fatal(err)
	}
	want := openai.Usage{PromptTokens: 15, CompletionTokens: 1, TotalTokens: 16,
		PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 5}}
	if got := s.Usage(); got.PromptTokens != want.PromptTokens || got.TotalTokens != want.TotalTokens || got.Cached() != 5 || s.Done() {
		t.Errorf("usage %+v done %v, want %+v not done", got, s.Done(), want)
	}
	// message_start's output count is not final: the relay counts a cut
	// stream's output locally.
	if s.Final() {
		t.Error("final usage before message_delta")
	}
	delta := `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}`
	if err := s.Observe(sse.Event{Name: EventMessageDelta, Data: []byte(delta)}); err != nil || !s.Final() || s.Usage().CompletionTokens != 42 {
		t.Errorf("after message_delta: final %v usage %+v err %v", s.Final(), s.Usage(), err)
	}
}

func TestMessagesStreamUsage(t *testing.T) {
	s := NewMessagesStream("m", "msg")
	if _, ok := s.Usage(); ok {
		t.Error("usage reported before any")
	}
	s.Convert(&openai.ChatChunk{Choices: []openai.ChunkChoice{}, Usage: &openai.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}})
	if u, ok := s.Usage(); !ok || u.TotalTokens != 7 {
		t.Errorf("usage %+v %v", u, ok)
	}
}

// Chunks after Finish are ignored: the stream is already closed.
func TestMessagesStreamAfterFinish(t *testing.T) {
	s := NewMessagesStream("m", "msg")
	s.Finish()
	text := "late"
	if evs := s.Convert(&openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{Content: &text}}}}); evs != nil {
		t.Errorf("events after Finish: %v", names(evs))
	}
}

// A server that sends each complete call at index 0 (seen on some
// OpenAI-compatible servers) still gives one tool_use block per call.
func TestMessagesStreamToolCallsAtSameIndex(t *testing.T) {
	zero := 0
	call := func(id, args string) *openai.ChatChunk {
		return &openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCall{
			{Index: &zero, ID: id, Type: "function", Function: openai.FunctionCall{Name: "f", Arguments: args}},
		}}}}}
	}
	s := NewMessagesStream("m", "msg")
	events := append(s.Convert(call("a", `{"x":1}`)), s.Convert(call("b", `{"x":2}`))...)
	events = append(events, s.Finish()...)
	checkEvents(t, events)
	starts := 0
	for _, ev := range events {
		if ev.Name == EventContentBlockStart {
			starts++
		}
	}
	if starts != 2 {
		t.Errorf("%d blocks, want 2: %v", starts, names(events))
	}
}

// A fragment for a call whose block is already closed cannot be placed:
// it is dropped rather than opening a nameless tool_use block.
func TestMessagesStreamStrayFragment(t *testing.T) {
	zero, one := 0, 1
	chunk := func(tc openai.ToolCall) *openai.ChatChunk {
		return &openai.ChatChunk{Choices: []openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCall{tc}}}}}
	}
	s := NewMessagesStream("m", "msg")
	events := s.Convert(chunk(openai.ToolCall{Index: &zero, ID: "a", Function: openai.FunctionCall{Name: "f", Arguments: "{}"}}))
	events = append(events, s.Convert(chunk(openai.ToolCall{Index: &one, ID: "b", Function: openai.FunctionCall{Name: "g", Arguments: "{}"}}))...)
	events = append(events, s.Convert(chunk(openai.ToolCall{Index: &zero, Function: openai.FunctionCall{Arguments: `{"late":1}`}}))...)
	events = append(events, s.Finish()...)
	checkEvents(t, events)
	if n := len(events); n != 9 {
		t.Errorf("%d events: %v", n, names(events))
	}
}

// The relay feeds every upstream event through a ChatStream, so its cost
// per event matters: go test -bench ChatStream -benchmem.
func BenchmarkChatStream(b *testing.B) {
	in, err := os.ReadFile("testdata/chat_stream/thinking_text_tools.sse")
	if err != nil {
		b.Fatal(err)
	}
	events := readEvents(b, in)
	b.Run("Convert", func(b *testing.B) {
		for b.Loop() {
			s := NewChatStream("m", 0)
			for _, ev := range events {
				if _, err := s.Convert(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	})
	b.Run("Observe", func(b *testing.B) {
		for b.Loop() {
			s := NewChatStream("m", 0)
			for _, ev := range events {
				if err := s.Observe(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	})
}
