package bedrock

import (
	"encoding/json"
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// ChatStream converts the events of ConverseStream (the frames'
// :event-type and JSON payload) into OpenAI chat chunks. Usage arrives in
// the last event, "metadata", after messageStop. A ChatStream serves one
// stream and is not safe for concurrent use.
type ChatStream struct {
	model   string
	id      string
	created int64

	calls map[int]int // content block index → tool call index
	done  bool        // messageStop was seen
	usage *ConverseUsage
}

// NewChatStream starts a conversion whose chunks carry the given model, id
// and creation time.
func NewChatStream(model, id string, created int64) *ChatStream {
	return &ChatStream{model: model, id: id, created: created, calls: map[int]int{}}
}

// streamEvent covers the payloads of every ConverseStream event type.
type streamEvent struct {
	Role              string `json:"role"`
	ContentBlockIndex int    `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
	} `json:"delta"`
	StopReason string         `json:"stopReason"`
	Usage      *ConverseUsage `json:"usage"`
}

// Convert converts one event into zero or more chunks. Unknown event types
// are skipped, as new ones appear.
func (s *ChatStream) Convert(eventType string, payload []byte) ([]openai.ChatChunk, error) {
	var ev streamEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("decode converse stream event %s: %w", eventType, err)
	}
	switch eventType {
	case "messageStart":
		return []openai.ChatChunk{s.chunk(openai.Delta{Role: "assistant"}, nil)}, nil
	case "contentBlockStart":
		if ev.Start == nil || ev.Start.ToolUse == nil {
			return nil, nil
		}
		n := len(s.calls)
		s.calls[ev.ContentBlockIndex] = n
		call := openai.ToolCall{Index: &n, ID: ev.Start.ToolUse.ToolUseID, Type: "function",
			Function: openai.FunctionCall{Name: ev.Start.ToolUse.Name}}
		return []openai.ChatChunk{s.chunk(openai.Delta{ToolCalls: []openai.ToolCall{call}}, nil)}, nil
	case "contentBlockDelta":
		switch {
		case ev.Delta == nil:
		case ev.Delta.Text != nil:
			return []openai.ChatChunk{s.chunk(openai.Delta{Content: ev.Delta.Text}, nil)}, nil
		case ev.Delta.ToolUse != nil:
			n, ok := s.calls[ev.ContentBlockIndex]
			if !ok {
				return nil, fmt.Errorf("converse stream: tool input for block %d, which started no tool call", ev.ContentBlockIndex)
			}
			call := openai.ToolCall{Index: &n, Function: openai.FunctionCall{Arguments: ev.Delta.ToolUse.Input}}
			return []openai.ChatChunk{s.chunk(openai.Delta{ToolCalls: []openai.ToolCall{call}}, nil)}, nil
		}
		return nil, nil // reasoning deltas: no place in OpenAI chat
	case "messageStop":
		s.done = true
		reason := finishReason(ev.StopReason)
		return []openai.ChatChunk{s.chunk(openai.Delta{}, &reason)}, nil
	case "metadata":
		if ev.Usage != nil {
			s.usage = ev.Usage
		}
	}
	return nil, nil
}

func (s *ChatStream) chunk(delta openai.Delta, finish *string) openai.ChatChunk {
	return openai.ChatChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []openai.ChunkChoice{{Delta: delta, FinishReason: finish}},
	}
}

// Done reports whether the stream ended properly (messageStop).
func (s *ChatStream) Done() bool { return s.done }

// HasUsage reports whether the metadata event with Bedrock's usage came.
func (s *ChatStream) HasUsage() bool { return s.usage != nil }

// Usage returns the usage Bedrock reported (zero before metadata).
func (s *ChatStream) Usage() openai.Usage { return s.usage.OpenAIUsage() }

// UsageChunk is the final chunk with usage and no choices, for clients that
// asked for stream_options.include_usage.
func (s *ChatStream) UsageChunk() openai.ChatChunk {
	u := s.Usage()
	return openai.ChatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []openai.ChunkChoice{}, Usage: &u}
}
