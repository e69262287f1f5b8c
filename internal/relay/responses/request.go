// Package responses converts OpenAI's Responses API (POST /v1/responses) to
// and from the relay's hub, the OpenAI chat types: a Responses request
// becomes a chat request (ToChatRequest), a chat answer becomes a Response
// (FromChatResponse), and a chat stream becomes the Responses event stream
// (Stream). Every upstream dialect that converts chat (Anthropic, Gemini,
// chat-only OpenAI-compatible upstreams, and each provider added later)
// thereby serves /v1/responses: Responses ⇄ OpenAI chat ⇄ the dialect.
//
// Nothing is stored: a request that names a previous_response_id is refused
// (the caller must send the whole conversation, as Codex does), and every
// answer says store: false.
package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Request is the part of a Responses request body the conversion reads.
type Request struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"` // a string or an array of items
	Instructions       string          `json:"instructions,omitempty"`
	Tools              []Tool          `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	MaxOutputTokens    *int            `json:"max_output_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	User               string          `json:"user,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
}

// Tool is one entry of tools. Only function tools convert; the hosted
// tools (web_search, file_search, code_interpreter …) and custom tools
// exist only at OpenAI and are left out (ToChatRequest).
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// item is one input item. An item without a type but with a role is a
// message (the API's "easy input message").
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"` // a string or an array of parts
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"` // a string or an array of parts
}

// part is one element of a message's (or a tool output's) content.
type part struct {
	Type     string          `json:"type"` // input_text, output_text, input_image, refusal …
	Text     string          `json:"text"`
	Refusal  string          `json:"refusal"`
	ImageURL string          `json:"image_url"`
	Detail   string          `json:"detail"`
	FileID   json.RawMessage `json:"file_id"`
}

// Errors of ToChatRequest: the relay answers each with 400.
var (
	ErrPreviousResponse = errors.New("previous_response_id is not supported: this gateway stores no responses; send the whole conversation in input (store: false)")
	ErrNoInput          = errors.New("input is required")
)

// ToChatRequest converts a Responses request to a chat request for model:
// instructions and system/developer messages become system messages,
// function_call items the assistant's tool calls (consecutive calls
// joined in one assistant message, as chat wants them), function_call_output
// items tool messages. Reasoning items are dropped: their encrypted content
// is OpenAI's and no other upstream can read it.
func ToChatRequest(in *Request, model string) (*openai.ChatRequest, error) {
	if in.PreviousResponseID != "" {
		return nil, ErrPreviousResponse
	}
	out := &openai.ChatRequest{Model: model, Stream: in.Stream, Temperature: in.Temperature, TopP: in.TopP,
		User: in.User, MaxTokens: in.MaxOutputTokens}
	if in.Stream {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if in.Instructions != "" {
		out.Messages = append(out.Messages, openai.Message{Role: "system", Content: openai.TextContent(in.Instructions)})
	}
	msgs, err := inputMessages(in.Input)
	if err != nil {
		return nil, err
	}
	out.Messages = append(out.Messages, msgs...)
	for _, t := range in.Tools {
		if t.Type != "function" {
			continue
		}
		if t.Name == "" {
			return nil, errors.New("tools: a function tool needs a name")
		}
		out.Tools = append(out.Tools, openai.Tool{Type: "function",
			Function: openai.Function{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if len(out.Tools) > 0 {
		choice, err := toolChoice(in.ToolChoice)
		if err != nil {
			return nil, err
		}
		out.ToolChoice = choice
	}
	return out, nil
}

// inputMessages converts input, a string (one user message) or a list of
// items.
func inputMessages(input json.RawMessage) ([]openai.Message, error) {
	if len(input) == 0 || string(input) == "null" {
		return nil, ErrNoInput
	}
	if input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return nil, err
		}
		return []openai.Message{{Role: "user", Content: openai.TextContent(s)}}, nil
	}
	var items []item
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if len(items) == 0 {
		return nil, ErrNoInput
	}
	var out []openai.Message
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			m, err := message(it)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %w", i, err)
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, fmt.Errorf("input[%d]: a function_call needs call_id and name", i)
			}
			call := openai.ToolCall{ID: it.CallID, Type: "function",
				Function: openai.FunctionCall{Name: it.Name, Arguments: orEmptyObject(it.Arguments)}}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				// Chat puts an assistant's text and its calls in one message.
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
				continue
			}
			out = append(out, openai.Message{Role: "assistant", ToolCalls: []openai.ToolCall{call}})
		case "function_call_output":
			if it.CallID == "" {
				return nil, fmt.Errorf("input[%d]: a function_call_output needs call_id", i)
			}
			text, err := outputText(it.Output)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: output: %w", i, err)
			}
			out = append(out, openai.Message{Role: "tool", ToolCallID: it.CallID, Content: openai.TextContent(text)})
		case "reasoning", "item_reference":
			// Reasoning is OpenAI's own (encrypted); a reference needs the
			// stored item, which this gateway does not keep.
		default:
			return nil, fmt.Errorf("input[%d]: item type %q is not supported on this model's channel", i, it.Type)
		}
	}
	return out, nil
}

// message converts a message item.
func message(it item) (openai.Message, error) {
	role := it.Role
	switch role {
	case "user", "assistant", "system":
	case "developer":
		role = "system"
	default:
		return openai.Message{}, fmt.Errorf("unknown role %q", it.Role)
	}
	if len(it.Content) > 0 && it.Content[0] == '"' {
		return openai.Message{Role: role, Content: it.Content}, nil
	}
	var parts []part
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return openai.Message{}, fmt.Errorf("content: %w", err)
	}
	var chat []openai.ContentPart
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			chat = append(chat, openai.ContentPart{Type: "text", Text: p.Text})
		case "refusal":
			chat = append(chat, openai.ContentPart{Type: "text", Text: p.Refusal})
		case "input_image":
			if p.ImageURL == "" {
				return openai.Message{}, errors.New("input_image: only image_url is supported (file_id needs OpenAI's file store)")
			}
			chat = append(chat, openai.ContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: p.ImageURL, Detail: p.Detail}})
		default:
			return openai.Message{}, fmt.Errorf("content part type %q is not supported on this model's channel", p.Type)
		}
	}
	if role != "user" {
		// Only user messages take images in chat; the others are text.
		var b strings.Builder
		for _, p := range chat {
			b.WriteString(p.Text)
		}
		return openai.Message{Role: role, Content: openai.TextContent(b.String())}, nil
	}
	content, err := json.Marshal(chat)
	if err != nil {
		return openai.Message{}, err
	}
	return openai.Message{Role: role, Content: content}, nil
}

// outputText is a function_call_output's output as text: a string, or the
// text of an array of parts.
func outputText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// toolChoice converts tool_choice: "auto", "none", "required" as they are;
// {"type":"function","name":n} to chat's nested form. Hosted-tool choices
// fall back to auto: those tools were left out.
func toolChoice(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		return raw, nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("tool_choice: %w", err)
	}
	if c.Type != "function" {
		return json.RawMessage(`"auto"`), nil
	}
	return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
