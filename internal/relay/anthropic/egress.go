package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// FromChatRequest converts an OpenAI chat request to a Messages API request
// for the upstream model named model.
func FromChatRequest(req *openai.ChatRequest, model string) (*Request, error) {
	out := &Request{
		Model:       model,
		MaxTokens:   DefaultMaxTokens,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stream:      req.Stream,
	}
	switch {
	case req.MaxCompletionTokens != nil:
		out.MaxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		out.MaxTokens = *req.MaxTokens
	}
	if out.MaxTokens < 1 {
		return nil, fmt.Errorf("max_tokens %d: must be at least 1", out.MaxTokens)
	}
	// OpenAI accepts temperatures up to 2, Anthropic up to 1.
	if t := req.Temperature; t != nil && *t > 1 {
		one := 1.0
		out.Temperature = &one
	}
	if req.User != "" {
		out.Metadata = &Metadata{UserID: req.User}
	}
	var err error
	if out.System, out.Messages, err = fromChatMessages(req.Messages); err != nil {
		return nil, err
	}
	stop, err := openai.StopWords(req.Stop)
	if err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	for _, s := range stop {
		if s != "" { // Anthropic rejects empty stop sequences
			out.StopSequences = append(out.StopSequences, s)
		}
	}
	if out.Tools, err = fromChatTools(req.Tools); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = fromChatToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	return out, nil
}

// fromChatMessages splits system text from the conversation and merges
// consecutive turns of one role, since Anthropic requires alternation.
func fromChatMessages(msgs []openai.Message) (Content, []Message, error) {
	var system []string
	var out []Message
	for i, m := range msgs {
		var (
			role   = m.Role
			blocks Content
			err    error
		)
		switch m.Role {
		case "system", "developer":
			var text string
			if text, err = textOnly(m.Content); err == nil && text != "" {
				system = append(system, text)
			}
		case "user":
			blocks, err = userBlocks(m.Content)
		case "assistant":
			blocks, err = assistantBlocks(m)
		case "tool":
			role = "user"
			blocks, err = toolResultBlock(m)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = appendTurn(out, role, blocks)
	}
	var sys Content
	if len(system) > 0 {
		sys = Content{{Type: BlockText, Text: strings.Join(system, "\n\n")}}
	}
	return sys, out, nil
}

// appendTurn adds blocks as a turn of role, into the last turn when it has
// the same role. A message with nothing in it is dropped.
func appendTurn(msgs []Message, role string, blocks Content) []Message {
	if len(blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, Message{Role: role, Content: blocks})
}

// textOnly joins the text parts of a content that may hold only text.
func textOnly(content json.RawMessage) (string, error) {
	parts, err := openai.Parts(content)
	if err != nil {
		return "", fmt.Errorf("decode content: %w", err)
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q not allowed here", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}

// userBlocks converts a user content; empty text parts are dropped because
// Anthropic rejects empty text blocks.
func userBlocks(content json.RawMessage) (Content, error) {
	parts, err := openai.Parts(content)
	if err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	var blocks Content
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, Block{Type: BlockText, Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, errors.New("image_url part without image_url")
			}
			src, err := imageSource(p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, Block{Type: BlockImage, Source: src})
		default:
			return nil, fmt.Errorf("unknown content part type %q", p.Type)
		}
	}
	return blocks, nil
}

// imageSource maps a data: URL to an inline image and an http(s) URL to a
// URL source.
func imageSource(url string) (*ImageSource, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mime, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mime == "" {
			return nil, errors.New("image data URL must be data:<media type>;base64,<data>")
		}
		return &ImageSource{Type: SourceBase64, MediaType: mime, Data: data}, nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return &ImageSource{Type: SourceURL, URL: url}, nil
	}
	return nil, fmt.Errorf("image URL %.40q: want a data: or http(s) URL", url)
}

// assistantBlocks converts an assistant message: its text, then one
// tool_use block per tool call.
func assistantBlocks(m openai.Message) (Content, error) {
	text, err := textOnly(m.Content)
	if err != nil {
		return nil, err
	}
	var blocks Content
	if text != "" {
		blocks = append(blocks, Block{Type: BlockText, Text: text})
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, fmt.Errorf("tool call %s: unknown type %q", tc.ID, tc.Type)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, errors.New("tool call without id or function name")
		}
		input, err := argumentsObject(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %s: %w", tc.ID, err)
		}
		blocks = append(blocks, Block{Type: BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	return blocks, nil
}

// argumentsObject parses a call's JSON-encoded arguments into the object
// Anthropic wants as input. Empty arguments mean no arguments.
func argumentsObject(args string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(args))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(b) {
		return nil, errors.New("arguments are not valid JSON")
	}
	if b[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, b) // b is valid
	return buf.Bytes(), nil
}

// toolResultBlock converts a tool message to a tool_result block.
func toolResultBlock(m openai.Message) (Content, error) {
	if m.ToolCallID == "" {
		return nil, errors.New("tool message without tool_call_id")
	}
	text, err := textOnly(m.Content)
	if err != nil {
		return nil, err
	}
	b := Block{Type: BlockToolResult, ToolUseID: m.ToolCallID}
	if text != "" {
		b.Content = Content{{Type: BlockText, Text: text}}
	}
	return Content{b}, nil
}

func fromChatTools(tools []openai.Tool) ([]Tool, error) {
	var out []Tool
	for i, t := range tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tool %d: unknown type %q", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, fmt.Errorf("tool %d: no function name", i)
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	return out, nil
}

func fromChatToolChoice(raw json.RawMessage) (*ToolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tool_choice: %w", err)
		}
		switch s {
		case "auto":
			return &ToolChoice{Type: ChoiceAuto}, nil
		case "required":
			return &ToolChoice{Type: ChoiceAny}, nil
		case "none":
			return &ToolChoice{Type: ChoiceNone}, nil
		}
		return nil, fmt.Errorf("tool_choice: unknown value %q", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("tool_choice: %w", err)
	}
	if obj.Type != "function" || obj.Function.Name == "" {
		return nil, errors.New(`tool_choice: want {"type":"function","function":{"name":...}}`)
	}
	return &ToolChoice{Type: ChoiceTool, Name: obj.Function.Name}, nil
}
