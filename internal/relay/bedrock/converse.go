package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// ConverseRequest is the body of Converse and ConverseStream.
type ConverseRequest struct {
	Messages        []Message        `json:"messages"`
	System          []SystemBlock    `json:"system,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
}

// Message is one turn: role "user" or "assistant".
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is a union: exactly one field is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *ImageBlock       `json:"image,omitempty"`
	ToolUse          *ToolUse          `json:"toolUse,omitempty"`
	ToolResult       *ToolResult       `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
}

// ImageBlock is an image sent inline; Bytes is base64 in JSON.
type ImageBlock struct {
	Format string      `json:"format"` // png, jpeg, gif, webp
	Source ImageSource `json:"source"`
}

// ImageSource holds an image's bytes.
type ImageSource struct {
	Bytes []byte `json:"bytes"`
}

// ToolUse is a call the model made; Input is a JSON object.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResult answers a ToolUse.
type ToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"` // success or error
}

// ToolResultContent is one part of a tool result.
type ToolResultContent struct {
	Text *string         `json:"text,omitempty"`
	JSON json.RawMessage `json:"json,omitempty"`
}

// ReasoningContent is a model's visible reasoning.
type ReasoningContent struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
}

// SystemBlock is one system prompt.
type SystemBlock struct {
	Text string `json:"text"`
}

// InferenceConfig holds the sampling parameters.
type InferenceConfig struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig declares the tools and how the model may use them.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is one tool declaration.
type Tool struct {
	ToolSpec ToolSpec `json:"toolSpec"`
}

// ToolSpec describes a function; InputSchema.JSON is a JSON Schema.
type ToolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"inputSchema"`
}

// InputSchema wraps a tool's JSON Schema.
type InputSchema struct {
	JSON json.RawMessage `json:"json"`
}

// ToolChoice is a union: auto, any (some tool must be called) or one tool.
type ToolChoice struct {
	Auto *struct{}     `json:"auto,omitempty"`
	Any  *struct{}     `json:"any,omitempty"`
	Tool *ToolNameOnly `json:"tool,omitempty"`
}

// ToolNameOnly names the tool a ToolChoice forces.
type ToolNameOnly struct {
	Name string `json:"name"`
}

// FromChatRequest converts an OpenAI chat request into a Converse request:
// system and developer messages → system; max_completion_tokens (or
// max_tokens) → inferenceConfig.maxTokens, temperature, top_p → topP, stop
// → stopSequences; tools → toolConfig; assistant tool calls → toolUse
// blocks; tool messages → toolResult blocks of a user turn. Consecutive
// turns of one role are merged, as Converse wants roles to alternate.
func FromChatRequest(req *openai.ChatRequest) (*ConverseRequest, error) {
	out := &ConverseRequest{}
	for i, m := range req.Messages {
		if err := appendMessage(out, m); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	if len(out.Messages) == 0 {
		return nil, errors.New("messages: at least one user or assistant message is required")
	}
	stop, err := openai.StopWords(req.Stop)
	if err != nil {
		return nil, fmt.Errorf("stop: want a string or an array of strings: %w", err)
	}
	ic := InferenceConfig{MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, StopSequences: stop}
	if req.MaxCompletionTokens != nil {
		ic.MaxTokens = req.MaxCompletionTokens // OpenAI's newer name wins
	}
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		out.InferenceConfig = &ic
	}
	out.ToolConfig, err = toolConfig(req, usesTools(out.Messages))
	if err != nil {
		return nil, err
	}
	return out, nil
}

func appendMessage(out *ConverseRequest, m openai.Message) error {
	switch m.Role {
	case "system", "developer":
		parts, err := openai.Parts(m.Content)
		if err != nil {
			return fmt.Errorf("content: %w", err)
		}
		for _, p := range parts {
			if p.Type != "text" {
				return fmt.Errorf("a %s message may hold only text, not %q", m.Role, p.Type)
			}
			if p.Text != "" {
				out.System = append(out.System, SystemBlock{Text: p.Text})
			}
		}
		return nil
	case "user":
		blocks, err := userBlocks(m.Content)
		if err != nil {
			return err
		}
		out.Messages = appendTurn(out.Messages, "user", blocks)
	case "assistant":
		blocks, err := assistantBlocks(m)
		if err != nil {
			return err
		}
		out.Messages = appendTurn(out.Messages, "assistant", blocks)
	case "tool":
		if m.ToolCallID == "" {
			return errors.New("tool message without tool_call_id")
		}
		text, err := joinText(m.Content)
		if err != nil {
			return err
		}
		res := &ToolResult{ToolUseID: m.ToolCallID, Content: []ToolResultContent{{Text: &text}}}
		out.Messages = appendTurn(out.Messages, "user", []ContentBlock{{ToolResult: res}})
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	return nil
}

func appendTurn(msgs []Message, role string, blocks []ContentBlock) []Message {
	if len(blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, Message{Role: role, Content: blocks})
}

func userBlocks(content json.RawMessage) ([]ContentBlock, error) {
	parts, err := openai.Parts(content)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	var blocks []ContentBlock
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, textBlock(p.Text))
			}
		case "image_url":
			img, err := imageBlock(p.ImageURL)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, ContentBlock{Image: img})
		default:
			return nil, fmt.Errorf("content part type %q is not supported", p.Type)
		}
	}
	return blocks, nil
}

func textBlock(s string) ContentBlock { return ContentBlock{Text: &s} }

// imageFormats are the image types Converse takes, by MIME type.
var imageFormats = map[string]string{
	"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp",
}

// imageBlock decodes a data: URL; Converse takes no image URLs, and the
// gateway does not fetch them on a client's behalf.
func imageBlock(img *openai.ImageURL) (*ImageBlock, error) {
	if img == nil || img.URL == "" {
		return nil, errors.New("image_url: no url")
	}
	raw := img.URL
	if len(raw) < 5 || !strings.EqualFold(raw[:5], "data:") {
		return nil, errors.New("image_url: Bedrock takes images only inline, as data:<mime type>;base64,<data>")
	}
	meta, data, ok := strings.Cut(raw[5:], ",")
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	format, known := imageFormats[strings.ToLower(mime)]
	if !ok || !isBase64 || !known {
		return nil, errors.New("image_url: want data:image/(png|jpeg|gif|webp);base64,<data>")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("image_url: bad base64: %w", err)
	}
	return &ImageBlock{Format: format, Source: ImageSource{Bytes: b}}, nil
}

func assistantBlocks(m openai.Message) ([]ContentBlock, error) {
	text, err := joinText(m.Content)
	if err != nil {
		return nil, err
	}
	var blocks []ContentBlock
	if text != "" {
		blocks = append(blocks, textBlock(text))
	}
	for _, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, errors.New("tool call without id or function name")
		}
		input, err := callInput(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q (%s): %w", tc.ID, tc.Function.Name, err)
		}
		blocks = append(blocks, ContentBlock{ToolUse: &ToolUse{ToolUseID: tc.ID, Name: tc.Function.Name, Input: input}})
	}
	return blocks, nil
}

// joinText concatenates a text-only content.
func joinText(content json.RawMessage) (string, error) {
	parts, err := openai.Parts(content)
	if err != nil {
		return "", fmt.Errorf("content: %w", err)
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported here, only text", p.Type)
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// callInput checks that a call's arguments are one JSON object; empty
// arguments (a function without parameters) become {}.
func callInput(arguments string) (json.RawMessage, error) {
	t := strings.TrimSpace(arguments)
	if t == "" {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if !strings.HasPrefix(t, "{") || json.Compact(&buf, []byte(t)) != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %.60q", arguments)
	}
	return buf.Bytes(), nil
}

func usesTools(msgs []Message) bool {
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.ToolUse != nil || b.ToolResult != nil {
				return true
			}
		}
	}
	return false
}

// toolConfig converts tools and tool_choice. Converse has no "none": the
// tools are left out then, unless the conversation holds tool blocks, for
// which Converse requires toolConfig; the model is then free to call
// (auto).
func toolConfig(req *openai.ChatRequest, history bool) (*ToolConfig, error) {
	if len(req.Tools) == 0 {
		if history {
			return nil, errors.New("tools: the conversation has tool calls, and Bedrock's Converse API needs the tools declared")
		}
		return nil, nil
	}
	tc := &ToolConfig{}
	for i, t := range req.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return nil, fmt.Errorf("tools[%d]: only named function tools are supported", i)
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tc.Tools = append(tc.Tools, Tool{ToolSpec: ToolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: InputSchema{JSON: schema}}})
	}
	choice := strings.TrimSpace(string(req.ToolChoice))
	switch choice {
	case "", "null", `"auto"`:
	case `"required"`:
		tc.ToolChoice = &ToolChoice{Any: &struct{}{}}
	case `"none"`:
		if !history {
			return nil, nil
		}
	default:
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(req.ToolChoice, &named); err != nil || named.Function.Name == "" {
			return nil, fmt.Errorf("tool_choice: want \"auto\", \"none\", \"required\" or a named function, got %.60s", choice)
		}
		tc.ToolChoice = &ToolChoice{Tool: &ToolNameOnly{Name: named.Function.Name}}
	}
	return tc, nil
}
