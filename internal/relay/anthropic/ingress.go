package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// ToChatRequest converts a Messages API request to an OpenAI chat request
// for the upstream model named model.
func ToChatRequest(req *Request, model string) (*openai.ChatRequest, error) {
	out := &openai.ChatRequest{
		Model:       model,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stream:      req.Stream,
	}
	if req.MaxTokens > 0 {
		maxTokens := req.MaxTokens
		out.MaxTokens = &maxTokens
	}
	if req.Stream {
		// Usage is billed and reported from the final chunk.
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if req.Metadata != nil {
		out.User = req.Metadata.UserID
	}
	if len(req.StopSequences) > 0 {
		out.Stop, _ = json.Marshal(req.StopSequences)
	}
	if len(req.System) > 0 {
		text, err := joinText(req.System, "\n\n")
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		out.Messages = append(out.Messages, openai.Message{Role: "system", Content: openai.TextContent(text)})
	}
	for i, m := range req.Messages {
		var (
			msgs []openai.Message
			err  error
		)
		switch m.Role {
		case "user":
			msgs, err = toUserMessages(m.Content)
		case "assistant":
			msgs, err = toAssistantMessage(m.Content)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	var err error
	if out.Tools, err = toChatTools(req.Tools); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = toChatToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	return out, nil
}

// joinText joins text blocks; other blocks are an error.
func joinText(blocks Content, sep string) (string, error) {
	texts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type != BlockText {
			return "", fmt.Errorf("content block type %q not allowed here", b.Type)
		}
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, sep), nil
}

// toUserMessages converts a user turn. OpenAI wants tool results as "tool"
// messages right after the assistant's calls, so they come first; the rest
// of the turn follows as one user message. Images inside tool results move
// to that user message because OpenAI tool messages carry text only.
func toUserMessages(content Content) ([]openai.Message, error) {
	var (
		msgs  []openai.Message
		parts []openai.ContentPart
	)
	for _, b := range content {
		switch b.Type {
		case BlockText:
			parts = append(parts, openai.ContentPart{Type: "text", Text: b.Text})
		case BlockImage:
			p, err := imagePart(b.Source)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case BlockToolResult:
			msg, images, err := toToolMessage(b)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, msg)
			parts = append(parts, images...)
		case BlockThinking, BlockRedactedThinking:
		default:
			return nil, fmt.Errorf("unknown content block type %q", b.Type)
		}
	}
	if len(parts) > 0 {
		msgs = append(msgs, openai.Message{Role: "user", Content: partsContent(parts)})
	}
	return msgs, nil
}

// partsContent encodes parts as a string when they are a single text,
// which every OpenAI-compatible server accepts, else as an array.
func partsContent(parts []openai.ContentPart) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == "text" {
		return openai.TextContent(parts[0].Text)
	}
	b, _ := json.Marshal(parts)
	return b
}

func imagePart(src *ImageSource) (openai.ContentPart, error) {
	if src == nil {
		return openai.ContentPart{}, errors.New("image block without source")
	}
	var url string
	switch src.Type {
	case SourceBase64:
		url = "data:" + src.MediaType + ";base64," + src.Data
	case SourceURL:
		url = src.URL
	default:
		return openai.ContentPart{}, fmt.Errorf("unknown image source type %q", src.Type)
	}
	return openai.ContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: url}}, nil
}

// toToolMessage converts a tool_result to a tool message with its text
// joined, and returns its images apart. is_error has no OpenAI equivalent.
func toToolMessage(b Block) (openai.Message, []openai.ContentPart, error) {
	if b.ToolUseID == "" {
		return openai.Message{}, nil, errors.New("tool_result without tool_use_id")
	}
	var (
		texts  []string
		images []openai.ContentPart
	)
	for _, c := range b.Content {
		switch c.Type {
		case BlockText:
			texts = append(texts, c.Text)
		case BlockImage:
			p, err := imagePart(c.Source)
			if err != nil {
				return openai.Message{}, nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
			}
			images = append(images, p)
		default:
			return openai.Message{}, nil, fmt.Errorf("tool_result %s: unknown content block type %q", b.ToolUseID, c.Type)
		}
	}
	msg := openai.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: openai.TextContent(strings.Join(texts, "\n"))}
	return msg, images, nil
}

// toAssistantMessage converts an assistant turn; thinking is dropped, and a
// turn with nothing left gives no message.
func toAssistantMessage(content Content) ([]openai.Message, error) {
	msg := openai.Message{Role: "assistant"}
	var parts []openai.ContentPart
	for _, b := range content {
		switch b.Type {
		case BlockText:
			parts = append(parts, openai.ContentPart{Type: "text", Text: b.Text})
		case BlockToolUse:
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
				ID:       b.ID,
				Type:     "function",
				Function: openai.FunctionCall{Name: b.Name, Arguments: compactInput(b.Input)},
			})
		case BlockThinking, BlockRedactedThinking:
		default:
			return nil, fmt.Errorf("unknown content block type %q", b.Type)
		}
	}
	if len(parts) > 0 {
		msg.Content = partsContent(parts)
	}
	if msg.Content == nil && msg.ToolCalls == nil {
		return nil, nil
	}
	return []openai.Message{msg}, nil
}

// compactInput encodes a tool_use input as OpenAI arguments.
func compactInput(input json.RawMessage) string {
	var buf bytes.Buffer
	if len(input) == 0 || json.Compact(&buf, input) != nil {
		return "{}"
	}
	return buf.String()
}

func toChatTools(tools []Tool) ([]openai.Tool, error) {
	var out []openai.Tool
	for _, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, fmt.Errorf("tool %q: server tool type %q has no OpenAI equivalent", t.Name, t.Type)
		}
		out = append(out, openai.Tool{Type: "function", Function: openai.Function{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}})
	}
	return out, nil
}

func toChatToolChoice(tc *ToolChoice) (json.RawMessage, error) {
	if tc == nil {
		return nil, nil
	}
	switch tc.Type {
	case ChoiceAuto:
		return json.RawMessage(`"auto"`), nil
	case ChoiceAny:
		return json.RawMessage(`"required"`), nil
	case ChoiceNone:
		return json.RawMessage(`"none"`), nil
	case ChoiceTool:
		if tc.Name == "" {
			return nil, errors.New("tool_choice: type tool without name")
		}
		type function struct {
			Name string `json:"name"`
		}
		return json.Marshal(struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}{"function", function{tc.Name}})
	}
	return nil, fmt.Errorf("tool_choice: unknown type %q", tc.Type)
}
