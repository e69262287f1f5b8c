package anthropic

import (
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// MessagesStream converts OpenAI chat chunks to an Anthropic event stream:
// message_start, then one content block at a time (text or tool_use), then
// message_delta and message_stop from Finish. Only choice 0 is read. A
// MessagesStream is not safe for concurrent use.
type MessagesStream struct {
	model    string
	id       string
	started  bool
	finished bool

	blocks int    // content blocks opened so far
	open   string // type of the open block, "" when none
	tool   int    // OpenAI index of the open tool_use block
	toolID string // its OpenAI id, when sent

	calledTools bool
	finish      string
	usage       *openai.Usage
}

// NewMessagesStream returns a converter for the message id, naming model.
func NewMessagesStream(model, id string) *MessagesStream {
	return &MessagesStream{model: model, id: id}
}

// Convert turns one chunk into events. The first call emits message_start.
// A text block opens at the first non-empty text, since Anthropic rejects
// empty text blocks when a client sends the message back. A chunk's usage
// (usually a final usage-only chunk) is kept for Finish.
func (s *MessagesStream) Convert(chunk *openai.ChatChunk) []sse.Event {
	if s.finished {
		return nil
	}
	out := s.start(nil)
	if chunk.Usage != nil {
		u := *chunk.Usage
		s.usage = &u
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		if t := c.Delta.Content; t != nil && *t != "" {
			if s.open != BlockText {
				out = s.openBlock(out, Block{Type: BlockText})
			}
			out = append(out, s.delta(BlockDelta{Type: DeltaText, Text: *t}))
		}
		for i, tc := range c.Delta.ToolCalls {
			out = s.toolDelta(out, i, tc)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.finish = *c.FinishReason
		}
	}
	return out
}

// toolDelta handles one tool call fragment; pos is its place in the delta,
// the index when a server omits it. A fragment starts a new tool_use block
// when its index or id differs from the open one. A fragment without id or
// name for a call that is no longer open cannot be placed and is dropped:
// OpenAI streams calls one after another.
func (s *MessagesStream) toolDelta(out []sse.Event, pos int, tc openai.ToolCall) []sse.Event {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	isOpen := s.open == BlockToolUse && idx == s.tool && (tc.ID == "" || tc.ID == s.toolID)
	if !isOpen {
		if tc.ID == "" && tc.Function.Name == "" {
			return out
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%s_%d", s.id, s.blocks)
		}
		out = s.openBlock(out, Block{Type: BlockToolUse, ID: id, Name: tc.Function.Name})
		s.tool, s.toolID, s.calledTools = idx, tc.ID, true
	}
	if tc.Function.Arguments != "" {
		out = append(out, s.delta(BlockDelta{Type: DeltaInputJSON, PartialJSON: tc.Function.Arguments}))
	}
	return out
}

// Finish ends the stream: it closes the open block and emits message_delta
// with the stop reason and usage, then message_stop. A stream that got no
// chunk still gets a well-formed sequence. Later calls return nothing.
func (s *MessagesStream) Finish() []sse.Event {
	if s.finished {
		return nil
	}
	s.finished = true
	out := s.closeBlock(s.start(nil))
	var u DeltaUsage
	var output int64
	if s.usage != nil {
		mu := messagesUsage(*s.usage)
		output = mu.OutputTokens
		u.InputTokens, u.CacheReadInputTokens = &mu.InputTokens, &mu.CacheReadInputTokens
	}
	u.OutputTokens = &output
	md := MessageDelta{
		Type:  EventMessageDelta,
		Delta: StopDelta{StopReason: stopReason(s.finish, s.calledTools)},
		Usage: &u,
	}
	return append(out, event(EventMessageDelta, md), event(EventMessageStop, MessageStop{Type: EventMessageStop}))
}

// Usage returns the usage the upstream reported, and false when it
// reported none (the relay then counts tokens itself).
func (s *MessagesStream) Usage() (openai.Usage, bool) {
	if s.usage == nil {
		return openai.Usage{}, false
	}
	return *s.usage, true
}

// start emits message_start once. Input usage is not known until the end
// of an OpenAI stream, so it starts at zero and message_delta reports it.
func (s *MessagesStream) start(out []sse.Event) []sse.Event {
	if s.started {
		return out
	}
	s.started = true
	msg := Response{ID: s.id, Type: "message", Role: "assistant", Model: s.model, Content: Content{}}
	return append(out, event(EventMessageStart, MessageStart{Type: EventMessageStart, Message: msg}))
}

func (s *MessagesStream) openBlock(out []sse.Event, b Block) []sse.Event {
	out = s.closeBlock(out)
	s.open = b.Type
	s.blocks++
	return append(out, event(EventContentBlockStart, ContentBlockStart{
		Type: EventContentBlockStart, Index: s.blocks - 1, ContentBlock: b,
	}))
}

func (s *MessagesStream) closeBlock(out []sse.Event) []sse.Event {
	if s.open == "" {
		return out
	}
	s.open = ""
	return append(out, event(EventContentBlockStop, ContentBlockStop{Type: EventContentBlockStop, Index: s.blocks - 1}))
}

func (s *MessagesStream) delta(d BlockDelta) sse.Event {
	return event(EventContentBlockDelta, ContentBlockDelta{Type: EventContentBlockDelta, Index: s.blocks - 1, Delta: d})
}
