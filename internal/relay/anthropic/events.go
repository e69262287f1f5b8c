package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Stream event names. Each event's data is JSON whose "type" is its name.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Content block delta types.
const (
	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
)

// MessageStart opens a stream with the message's id, model and input usage.
type MessageStart struct {
	Type    string   `json:"type"`
	Message Response `json:"message"`
}

// ContentBlockStart opens block Index; a tool_use block starts with an
// empty input, filled by input_json_delta fragments.
type ContentBlockStart struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock Block  `json:"content_block"`
}

// ContentBlockDelta adds to block Index.
type ContentBlockDelta struct {
	Type  string     `json:"type"`
	Index int        `json:"index"`
	Delta BlockDelta `json:"delta"`
}

// BlockDelta is a text_delta (Text), input_json_delta (PartialJSON),
// thinking_delta (Thinking) or signature_delta (Signature).
type BlockDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	PartialJSON string `json:"partial_json,omitempty"`
	Thinking    string `json:"thinking,omitempty"`
	Signature   string `json:"signature,omitempty"`
}

// MarshalJSON writes the field of the delta's type even when it is empty,
// as Anthropic does.
func (d BlockDelta) MarshalJSON() ([]byte, error) {
	switch d.Type {
	case DeltaText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{d.Type, d.Text})
	case DeltaInputJSON:
		return json.Marshal(struct {
			Type        string `json:"type"`
			PartialJSON string `json:"partial_json"`
		}{d.Type, d.PartialJSON})
	}
	type plain BlockDelta // no methods: avoids recursion
	return json.Marshal(plain(d))
}

// ContentBlockStop closes block Index.
type ContentBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDelta carries the stop reason and the usage so far.
type MessageDelta struct {
	Type  string      `json:"type"`
	Delta StopDelta   `json:"delta"`
	Usage *DeltaUsage `json:"usage,omitempty"`
}

// StopDelta is the delta of a message_delta event.
type StopDelta struct {
	StopReason   string  `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence"`
}

// DeltaUsage is the usage of a message_delta event. OutputTokens is
// cumulative. The input fields, sent by newer API versions, replace those of
// message_start when present; nil means absent.
type DeltaUsage struct {
	InputTokens              *int64         `json:"input_tokens,omitempty"`
	CacheCreationInputTokens *int64         `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64         `json:"cache_read_input_tokens,omitempty"`
	CacheCreation            *CacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             *int64         `json:"output_tokens,omitempty"`
}

// MessageStop ends a stream.
type MessageStop struct {
	Type string `json:"type"`
}

// StreamError is an error event an Anthropic stream sent, such as
// overloaded_error; the stream ends with it.
type StreamError struct {
	Type    string
	Message string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("anthropic stream error: %s: %s", e.Type, e.Message)
}

// event encodes v as the event name. The event types hold only strings,
// numbers and validated raw JSON, so encoding cannot fail.
func event(name string, v any) sse.Event {
	b, _ := json.Marshal(v)
	return sse.Event{Name: name, Data: b}
}

// eventType returns the event's name, read from the data's "type" field
// when the event line was absent.
func eventType(ev sse.Event) (string, error) {
	if ev.Name != "" {
		return ev.Name, nil
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(ev.Data, &t); err != nil {
		return "", fmt.Errorf("decode anthropic event: %w", err)
	}
	return t.Type, nil
}
