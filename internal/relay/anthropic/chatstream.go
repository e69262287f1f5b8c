package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// ChatStream converts an Anthropic event stream to OpenAI chat chunks and
// collects its usage. Feed it every event in order, through Convert, or
// through Observe when only the usage matters (passthrough). A ChatStream is
// not safe for concurrent use.
type ChatStream struct {
	model    string
	created  int64
	id       string
	roleSent bool
	done     bool
	final    bool // message_delta reported the final output count
	usage    Usage
	tools    map[int]*streamedCall // by Anthropic content block index
	nTools   int
}

// streamedCall is a tool_use block being streamed as an OpenAI tool call.
type streamedCall struct {
	index   int // OpenAI's index counts tool calls only
	hasArgs bool
}

// NewChatStream returns a converter whose chunks name model (the upstream's
// model when empty) and were created at the given Unix time.
func NewChatStream(model string, created int64) *ChatStream {
	return &ChatStream{model: model, created: created}
}

// Convert turns one Anthropic event into zero or more OpenAI chunks. The
// first chunk carries the assistant role. message_stop yields nothing: the
// caller writes [DONE]. An error event returns a *StreamError. Unknown
// events are ignored, as Anthropic asks of clients.
func (s *ChatStream) Convert(ev sse.Event) ([]openai.ChatChunk, error) {
	typ, err := eventType(ev)
	if err != nil {
		return nil, err
	}
	return s.convert(typ, ev)
}

// Observe reads only what Usage and Done report, skipping the content
// events that make up most of a stream. It returns the same errors as
// Convert.
func (s *ChatStream) Observe(ev sse.Event) error {
	typ, err := eventType(ev)
	if err != nil {
		return err
	}
	switch typ {
	case EventMessageStart, EventMessageDelta, EventMessageStop, EventError:
		_, err = s.convert(typ, ev)
	}
	return err
}

func (s *ChatStream) convert(typ string, ev sse.Event) ([]openai.ChatChunk, error) {
	switch typ {
	case EventMessageStart:
		var e MessageStart
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		s.id = e.Message.ID
		if s.model == "" {
			s.model = e.Message.Model
		}
		s.usage = e.Message.Usage
		empty := ""
		return s.chunk(openai.Delta{Content: &empty}, nil), nil
	case EventContentBlockStart:
		var e ContentBlockStart
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		return s.blockStart(e), nil
	case EventContentBlockDelta:
		var e ContentBlockDelta
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		return s.blockDelta(e), nil
	case EventContentBlockStop:
		var e ContentBlockStop
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		return s.blockStop(e), nil
	case EventMessageDelta:
		var e MessageDelta
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		s.addUsage(e.Usage)
		if e.Delta.StopReason == "" {
			return nil, nil
		}
		finish := finishReason(e.Delta.StopReason)
		return s.chunk(openai.Delta{}, &finish), nil
	case EventMessageStop:
		s.done = true
	case EventError:
		var e ErrorResponse
		if err := decodeEvent(typ, ev.Data, &e); err != nil {
			return nil, err
		}
		return nil, &StreamError{Type: e.Error.Type, Message: e.Error.Message}
	}
	return nil, nil
}

func (s *ChatStream) blockStart(e ContentBlockStart) []openai.ChatChunk {
	switch e.ContentBlock.Type {
	case BlockText:
		if e.ContentBlock.Text != "" {
			return s.chunk(openai.Delta{Content: &e.ContentBlock.Text}, nil)
		}
	case BlockToolUse:
		call := &streamedCall{index: s.nTools}
		s.nTools++
		if s.tools == nil {
			s.tools = make(map[int]*streamedCall)
		}
		s.tools[e.Index] = call
		return s.toolChunk(openai.ToolCall{
			Index:    &call.index,
			ID:       e.ContentBlock.ID,
			Type:     "function",
			Function: openai.FunctionCall{Name: e.ContentBlock.Name},
		})
	}
	return nil // thinking and blocks OpenAI has no place for
}

func (s *ChatStream) blockDelta(e ContentBlockDelta) []openai.ChatChunk {
	switch e.Delta.Type {
	case DeltaText:
		if e.Delta.Text != "" {
			return s.chunk(openai.Delta{Content: &e.Delta.Text}, nil)
		}
	case DeltaInputJSON:
		call := s.tools[e.Index]
		if call == nil || e.Delta.PartialJSON == "" {
			return nil
		}
		call.hasArgs = true
		return s.toolChunk(openai.ToolCall{
			Index:    &call.index,
			Function: openai.FunctionCall{Arguments: e.Delta.PartialJSON},
		})
	}
	return nil
}

// blockStop completes a tool call that got no arguments with "{}": Anthropic
// streams no fragment for an empty input, and OpenAI clients parse the
// arguments they accumulated as JSON.
func (s *ChatStream) blockStop(e ContentBlockStop) []openai.ChatChunk {
	call := s.tools[e.Index]
	if call == nil {
		return nil
	}
	delete(s.tools, e.Index)
	if call.hasArgs {
		return nil
	}
	return s.toolChunk(openai.ToolCall{Index: &call.index, Function: openai.FunctionCall{Arguments: "{}"}})
}

// addUsage folds message_delta usage in: output tokens are cumulative, and
// input fields, when sent, are the final counts.
func (s *ChatStream) addUsage(u *DeltaUsage) {
	if u == nil {
		return
	}
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&s.usage.OutputTokens, u.OutputTokens)
	s.final = s.final || u.OutputTokens != nil
	set(&s.usage.InputTokens, u.InputTokens)
	set(&s.usage.CacheReadInputTokens, u.CacheReadInputTokens)
	set(&s.usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
	if u.CacheCreation != nil {
		s.usage.CacheCreation = u.CacheCreation
	}
}

func (s *ChatStream) toolChunk(call openai.ToolCall) []openai.ChatChunk {
	return s.chunk(openai.Delta{ToolCalls: []openai.ToolCall{call}}, nil)
}

// chunk wraps a delta; the first chunk of the stream carries the role.
func (s *ChatStream) chunk(d openai.Delta, finish *string) []openai.ChatChunk {
	if !s.roleSent {
		d.Role = "assistant"
		s.roleSent = true
	}
	c := s.base()
	c.Choices = []openai.ChunkChoice{{Delta: d, FinishReason: finish}}
	return []openai.ChatChunk{c}
}

func (s *ChatStream) base() openai.ChatChunk {
	return openai.ChatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model}
}

// Usage returns the usage so far, the OpenAI way (see UsageOf).
func (s *ChatStream) Usage() openai.Usage {
	return chatUsage(s.usage)
}

// UsageChunk returns the final chunk OpenAI sends when a client asked for
// stream_options.include_usage: no choices, the usage.
func (s *ChatStream) UsageChunk() openai.ChatChunk {
	c := s.base()
	c.Choices = []openai.ChunkChoice{}
	u := s.Usage()
	c.Usage = &u
	return c
}

// Final reports whether message_delta brought the final output count.
// Before it, Usage holds message_start's report: the input and about one
// output token, far below what a stream cut off later produced.
func (s *ChatStream) Final() bool {
	return s.final
}

// Done reports whether message_stop was seen; a stream that ends without it
// was truncated.
func (s *ChatStream) Done() bool {
	return s.done
}

func decodeEvent(typ string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode anthropic %s event: %w", typ, err)
	}
	return nil
}
