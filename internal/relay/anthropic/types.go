// Package anthropic speaks the Anthropic Messages API: its wire types and
// conversions to and from the OpenAI chat dialect, both directions, JSON and
// streaming. It is pure: the relay core does the HTTP.
//
// Egress (an OpenAI client, an Anthropic channel): FromChatRequest,
// ToChatResponse, ChatStream. Ingress (an Anthropic client on /v1/messages,
// an OpenAI-compatible channel): ToChatRequest, FromChatResponse,
// MessagesStream. docs/decisions/anthropic.md lists the mappings chosen where
// the two APIs do not line up.
package anthropic

import (
	"encoding/json"
	"strings"
)

// Version is the anthropic-version header value these types follow.
const Version = "2023-06-01"

// DefaultMaxTokens is sent as max_tokens, which Anthropic requires, when an
// OpenAI request sets neither max_completion_tokens nor max_tokens.
const DefaultMaxTokens = 4096

// Endpoint returns the Messages API URL under baseURL, which has no trailing
// slash; a baseURL already ending in "/v1" is not given a second one.
func Endpoint(baseURL string) string {
	baseURL = strings.TrimSuffix(baseURL, "/")
	if strings.HasSuffix(baseURL, "/v1") {
		return baseURL + "/messages"
	}
	return baseURL + "/v1/messages"
}

// Request is a POST /v1/messages body. Fields not listed here (thinking,
// service_tier, cache_control, …) are dropped when a request is decoded
// into it; the same-dialect relay forwards the original bytes instead.
type Request struct {
	Model         string      `json:"model"`
	System        Content     `json:"system,omitempty"` // a string or text blocks
	Messages      []Message   `json:"messages"`
	MaxTokens     int         `json:"max_tokens"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	TopK          *int        `json:"top_k,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	Tools         []Tool      `json:"tools,omitempty"`
	ToolChoice    *ToolChoice `json:"tool_choice,omitempty"`
	Metadata      *Metadata   `json:"metadata,omitempty"`
}

// Message is one turn; Role is "user" or "assistant".
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a list of blocks. Anthropic also accepts a plain string, which
// decodes as one text block; Content always encodes as an array.
type Content []Block

// UnmarshalJSON accepts a string or an array of blocks.
func (c *Content) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: BlockText, Text: s}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Content block types.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Block is one content block; Type says which fields apply:
// text (Text), image (Source), tool_use (ID, Name, Input),
// tool_result (ToolUseID, Content, IsError), thinking (Thinking, Signature),
// redacted_thinking (Data).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *ImageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   Content         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

// MarshalJSON writes only the fields of the block's type, and writes the
// ones Anthropic always sends even when empty: a streamed text block starts
// as {"type":"text","text":""} and SDKs append deltas to that field, and a
// tool_use block always has an input object.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case BlockToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	case BlockThinking:
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Thinking, b.Signature})
	}
	type plain Block // no methods: avoids recursion
	return json.Marshal(plain(b))
}

// Image source types.
const (
	SourceBase64 = "base64"
	SourceURL    = "url"
)

// ImageSource is an image inline (base64: MediaType, Data) or by URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Tool is a client tool; InputSchema is a JSON Schema of type object.
// Server tools (web search, …) have a Type other than "" or "custom".
type Tool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Tool choice types.
const (
	ChoiceAuto = "auto"
	ChoiceAny  = "any"
	ChoiceTool = "tool"
	ChoiceNone = "none"
)

// ToolChoice says whether and which tool the model must use; Name is set
// for type "tool".
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Metadata describes the request; UserID is an opaque end-user id.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// Stop reasons.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopStopSequence    = "stop_sequence"
	StopToolUse         = "tool_use"
	StopPauseTurn       = "pause_turn"
	StopRefusal         = "refusal"
	StopContextExceeded = "model_context_window_exceeded"
)

// Response is a non-streaming Messages API answer, and the message of a
// message_start event (where StopReason is null and Content empty).
type Response struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"` // "message"
	Role         string  `json:"role"` // "assistant"
	Model        string  `json:"model"`
	Content      Content `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Usage is the token usage of a message. InputTokens excludes the cached
// prompt tokens, which are counted apart as written to or read from cache;
// CacheCreation splits the written ones by cache lifetime.
type Usage struct {
	InputTokens              int64          `json:"input_tokens"`
	CacheCreationInputTokens int64          `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64          `json:"cache_read_input_tokens"`
	CacheCreation            *CacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             int64          `json:"output_tokens"`
}

// CacheCreation is the split of cache_creation_input_tokens by the
// lifetime of the cache entry written ("ttl": "5m" or "1h" of
// cache_control).
type CacheCreation struct {
	Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
}

// ErrorResponse is the error body of the API and the data of an error event.
type ErrorResponse struct {
	Type  string      `json:"type"` // "error"
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes a failure; Type is e.g. "overloaded_error".
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
