// Package openai holds the OpenAI wire types modelgate speaks at its /v1
// ingress and to OpenAI-compatible upstreams. It is the hub of conversions:
// the Anthropic and Gemini packages translate to and from these types.
//
// The types carry only what conversions and billing read. The same-dialect
// path forwards bodies untouched, so unknown fields survive there; Extra-less
// structs here are for conversions only.
package openai

import "encoding/json"

// ChatRequest is a POST /v1/chat/completions body.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Stop                json.RawMessage `json:"stop,omitempty"` // a string or an array of strings
	Tools               []Tool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"` // "auto", "none", "required" or an object
	User                string          `json:"user,omitempty"`
}

// StreamOptions asks for a final usage chunk.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one chat message. Content is a string or an array of parts
// (see Parts); it is absent on assistant messages that only call tools.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string    `json:"type"` // "text" or "image_url"
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image by URL or as a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function describes a callable function; Parameters is a JSON Schema.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is a call the model made. In stream deltas Index says which call
// a fragment belongs to and Arguments arrives in pieces.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the name and JSON-encoded arguments of a call.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChatResponse is a non-streaming chat completion.
type ChatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // "chat.completion"
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is one completion of a response.
type Choice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"` // stop, length, tool_calls, content_filter
}

// ChatChunk is one streamed event of a chat completion.
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is the delta of one choice in a chunk.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is what a chunk adds to a message.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage is the token usage of a call. PromptTokens is the whole prompt,
// cache reads (PromptTokensDetails) and cache writes included.
type Usage struct {
	PromptTokens        int64                `json:"prompt_tokens"`
	CompletionTokens    int64                `json:"completion_tokens"`
	TotalTokens         int64                `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// CacheWriteTokens and CacheWrite1hTokens are the prompt tokens written
	// to a 5-minute and a 1-hour cache, for billing: OpenAI reports none,
	// the Anthropic conversion fills them. They are never sent to clients,
	// whose OpenAI usage has no such field.
	CacheWriteTokens   int64 `json:"-"`
	CacheWrite1hTokens int64 `json:"-"`
}

// PromptTokensDetails breaks down prompt tokens; cached tokens are billed at
// the model's cached price.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// Cached returns the cached prompt tokens, 0 when not reported.
func (u *Usage) Cached() int64 {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// ErrorBody is the error shape of the OpenAI API, which /v1 answers with.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes a failure.
type ErrorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// Parts returns a message content as parts: a plain string becomes one text
// part; null or absent content gives none.
func Parts(content json.RawMessage) ([]ContentPart, error) {
	if len(content) == 0 || string(content) == "null" {
		return nil, nil
	}
	if content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, err
		}
		return []ContentPart{{Type: "text", Text: s}}, nil
	}
	var parts []ContentPart
	err := json.Unmarshal(content, &parts)
	return parts, err
}

// TextContent encodes s as a string content.
func TextContent(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// StopWords returns the stop sequences of a request ("stop" is a string or
// an array).
func StopWords(stop json.RawMessage) ([]string, error) {
	if len(stop) == 0 || string(stop) == "null" {
		return nil, nil
	}
	if stop[0] == '"' {
		var s string
		err := json.Unmarshal(stop, &s)
		return []string{s}, err
	}
	var list []string
	err := json.Unmarshal(stop, &list)
	return list, err
}

// CapCompletion lowers the request's completion limit to at most limit:
// the field the client set (max_completion_tokens wins, as upstreams read
// it), else a new max_completion_tokens when newField says so (reasoning
// models), else a new max_tokens. A smaller limit the client sent stays.
func (r *ChatRequest) CapCompletion(limit int, newField bool) {
	switch {
	case r.MaxCompletionTokens != nil:
		if *r.MaxCompletionTokens > limit {
			r.MaxCompletionTokens = &limit
		}
	case r.MaxTokens != nil:
		if *r.MaxTokens > limit {
			r.MaxTokens = &limit
		}
	case newField:
		r.MaxCompletionTokens = &limit
	default:
		r.MaxTokens = &limit
	}
}
