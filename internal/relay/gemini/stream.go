package gemini

import (
	"encoding/json"
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// StreamError is an error object Gemini sent inside a stream, after the
// HTTP status was already 200.
type StreamError struct {
	Code    int
	Status  string
	Message string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("gemini stream error %d %s: %s", e.Code, e.Status, e.Message)
}

// ChatStream converts the events of a streamGenerateContent?alt=sse
// response into OpenAI chat chunks. Each event's data is a whole
// GenerateResponse holding the next piece of text or whole function calls;
// its usage metadata is the running total. A ChatStream serves one stream
// and is not safe for concurrent use.
type ChatStream struct {
	model   string
	id      string
	created int64

	sentRole bool           // the first chunk carries role "assistant"
	calls    int            // tool calls so far: the next call's index
	done     bool           // a finish reason was seen
	usage    *UsageMetadata // latest usage metadata
}

// NewChatStream starts a conversion whose chunks carry the given model, id
// and creation time.
func NewChatStream(model, id string, created int64) *ChatStream {
	return &ChatStream{model: model, id: id, created: created}
}

// Convert converts the data of one event into zero or more chunks. An error
// object in the event returns a *StreamError, a blocked prompt a
// *BlockedError.
func (s *ChatStream) Convert(data []byte) ([]openai.ChatChunk, error) {
	var ev struct {
		GenerateResponse
		Error *ErrorDetail `json:"error"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("decode gemini stream event: %w", err)
	}
	if ev.Error != nil {
		return nil, &StreamError{Code: ev.Error.Code, Status: ev.Error.Status, Message: ev.Error.Message}
	}
	if ev.UsageMetadata != nil {
		s.usage = ev.UsageMetadata
	}
	if len(ev.Candidates) == 0 {
		if ev.PromptFeedback != nil && ev.PromptFeedback.BlockReason != "" {
			return nil, &BlockedError{Reason: ev.PromptFeedback.BlockReason}
		}
		return nil, nil // usage only
	}
	c := ev.Candidates[0]
	text, calls := answer(c.Content.Parts, s.id, s.calls)
	var chunks []openai.ChatChunk
	if text != "" {
		chunks = append(chunks, s.chunk(openai.Delta{Content: &text}, nil))
	}
	if len(calls) > 0 {
		for i := range calls {
			index := s.calls + i
			calls[i].Index = &index
		}
		s.calls += len(calls)
		chunks = append(chunks, s.chunk(openai.Delta{ToolCalls: calls}, nil))
	}
	if c.FinishReason != "" && !s.done {
		s.done = true
		reason := finishReason(c.FinishReason, s.calls > 0)
		chunks = append(chunks, s.chunk(openai.Delta{}, &reason))
	}
	return chunks, nil
}

// chunk builds a chunk of choice 0; the stream's first chunk also carries
// the assistant role.
func (s *ChatStream) chunk(delta openai.Delta, finish *string) openai.ChatChunk {
	if !s.sentRole {
		s.sentRole = true
		delta.Role = "assistant"
	}
	return openai.ChatChunk{
		ID:      s.id,
		Object:  "chat.completion.chunk",
		Created: s.created,
		Model:   s.model,
		Choices: []openai.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	}
}

// Done reports whether a finish reason was seen, that is whether the stream
// ended normally.
func (s *ChatStream) Done() bool { return s.done }

// Usage returns the usage of the stream so far, from the latest usage
// metadata.
func (s *ChatStream) Usage() openai.Usage { return usageOf(s.usage) }

// UsageChunk returns the final chunk OpenAI sends when a client asked for
// stream_options.include_usage: no choices, only usage.
func (s *ChatStream) UsageChunk() openai.ChatChunk {
	u := s.Usage()
	return openai.ChatChunk{
		ID:      s.id,
		Object:  "chat.completion.chunk",
		Created: s.created,
		Model:   s.model,
		Choices: []openai.ChunkChoice{},
		Usage:   &u,
	}
}
