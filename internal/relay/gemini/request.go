package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Gemini's two conversation roles.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// FromChatRequest converts an OpenAI chat request into a generateContent
// body. The model and stream flag are not part of the body: they select the
// URL (see Endpoint). Every error it returns describes an invalid request.
func FromChatRequest(req *openai.ChatRequest) (*GenerateRequest, error) {
	if req == nil {
		return nil, errors.New("convert chat request: no request")
	}
	out := &GenerateRequest{Contents: []Content{}}
	if err := convertMessages(req.Messages, out); err != nil {
		return nil, err
	}
	tools, err := convertTools(req.Tools)
	if err != nil {
		return nil, err
	}
	out.Tools = tools
	if out.ToolConfig, err = convertToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	if out.GenerationConfig, err = convertGeneration(req); err != nil {
		return nil, err
	}
	return out, nil
}

// convertMessages fills the system instruction and contents of out.
func convertMessages(msgs []openai.Message, out *GenerateRequest) error {
	var system []Part
	// callNames maps tool_call ids to function names, because a Gemini
	// functionResponse is matched to its call by name, which OpenAI tool
	// messages do not carry. A later call with the same id wins.
	callNames := map[string]string{}
	for i, m := range msgs {
		var (
			role  string
			parts []Part
			err   error
		)
		switch m.Role {
		case "system", "developer":
			// Gemini has one system instruction: every system message joins
			// it, wherever it stood in the conversation.
			var p []Part
			if p, err = textParts(m.Content); err == nil {
				system = append(system, p...)
			}
		case "user":
			role = RoleUser
			parts, err = userParts(m.Content)
		case "assistant":
			role = RoleModel
			parts, err = assistantParts(m, callNames)
		case "tool":
			role = RoleUser
			parts, err = toolResultParts(m, callNames)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		out.Contents = appendContent(out.Contents, role, parts)
	}
	if len(out.Contents) == 0 {
		// Gemini answers "contents is not specified"; say it in the
		// client's terms.
		return errors.New("no user, assistant or tool message with content")
	}
	if len(system) > 0 {
		out.SystemInstruction = &Content{Parts: system}
	}
	return nil
}

// appendContent adds a turn, merging it into the previous one when both have
// the same role: consecutive tool results become one user turn, as Gemini
// expects all responses to a model turn's calls together. Turns without
// parts are dropped, since Gemini rejects them.
func appendContent(contents []Content, role string, parts []Part) []Content {
	if role == "" || len(parts) == 0 {
		return contents
	}
	if n := len(contents); n > 0 && contents[n-1].Role == role {
		contents[n-1].Parts = append(contents[n-1].Parts, parts...)
		return contents
	}
	return append(contents, Content{Role: role, Parts: parts})
}

// textParts converts a content that may hold only text.
func textParts(content json.RawMessage) ([]Part, error) {
	cps, err := openai.Parts(content)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	var parts []Part
	for _, cp := range cps {
		if cp.Type != "text" {
			return nil, fmt.Errorf("content part type %q is not supported here, only text", cp.Type)
		}
		if cp.Text != "" {
			parts = append(parts, Part{Text: cp.Text})
		}
	}
	return parts, nil
}

// userParts converts a user content: text and images.
func userParts(content json.RawMessage) ([]Part, error) {
	cps, err := openai.Parts(content)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	var parts []Part
	for _, cp := range cps {
		switch cp.Type {
		case "text":
			if cp.Text != "" {
				parts = append(parts, Part{Text: cp.Text})
			}
		case "image_url":
			p, err := imagePart(cp.ImageURL)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		default:
			return nil, fmt.Errorf("unknown content part type %q", cp.Type)
		}
	}
	return parts, nil
}

// imagePart turns a data: URL into inline data and an http(s) URL into file
// data. Gemini needs a MIME type for the latter; it is guessed from the
// path's extension, JPEG when there is none we know.
func imagePart(img *openai.ImageURL) (Part, error) {
	if img == nil || img.URL == "" {
		return Part{}, errors.New("image_url: no url")
	}
	raw := img.URL
	if len(raw) > 5 && strings.EqualFold(raw[:5], "data:") {
		meta, data, ok := strings.Cut(raw[5:], ",")
		mime, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mime == "" {
			return Part{}, errors.New("image_url: data URL must be data:<mime type>;base64,<data>")
		}
		return Part{InlineData: &Blob{MIMEType: mime, Data: data}}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Part{}, fmt.Errorf("image_url: want a data: or http(s) URL, got %.40q", raw)
	}
	mime, ok := imageTypes[strings.ToLower(path.Ext(u.Path))]
	if !ok {
		mime = "image/jpeg"
	}
	return Part{FileData: &FileData{MIMEType: mime, FileURI: raw}}, nil
}

// imageTypes maps file extensions to MIME types. It is a fixed table rather
// than mime.TypeByExtension, whose answers depend on the host's files.
var imageTypes = map[string]string{
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".png":  "image/png",
	".webp": "image/webp",
	".gif":  "image/gif",
	".heic": "image/heic",
	".heif": "image/heif",
}

// assistantParts converts an assistant message: its text, then one
// functionCall part per tool call. It records the calls' names in callNames.
func assistantParts(m openai.Message, callNames map[string]string) ([]Part, error) {
	parts, err := textParts(m.Content)
	if err != nil {
		return nil, err
	}
	for _, tc := range m.ToolCalls {
		if tc.Function.Name == "" {
			return nil, fmt.Errorf("tool call %q: no function name", tc.ID)
		}
		args, err := callArgs(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q (%s): %w", tc.ID, tc.Function.Name, err)
		}
		if tc.ID != "" {
			callNames[tc.ID] = tc.Function.Name
		}
		parts = append(parts, Part{FunctionCall: &FunctionCall{Name: tc.Function.Name, Args: args},
			ThoughtSignature: signatureOf(tc.ID)})
	}
	return parts, nil
}

// callArgs checks that a tool call's arguments are a JSON object and returns
// them compacted. Empty arguments, which some clients send for functions
// without parameters, become {}.
func callArgs(arguments string) (json.RawMessage, error) {
	if strings.TrimSpace(arguments) == "" {
		return json.RawMessage("{}"), nil
	}
	obj, ok := jsonObject(arguments)
	if !ok {
		return nil, fmt.Errorf("arguments are not a JSON object: %.60q", arguments)
	}
	return obj, nil
}

// jsonObject returns s compacted if it is one JSON object.
func jsonObject(s string) (json.RawMessage, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(t)); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// toolResultParts converts a tool message into a functionResponse part,
// named after the call it answers. The response must be a JSON object: a
// result that is one passes as is, anything else is wrapped as
// {"content": text}.
func toolResultParts(m openai.Message, callNames map[string]string) ([]Part, error) {
	if m.ToolCallID == "" {
		return nil, errors.New("tool message without tool_call_id")
	}
	name, ok := callNames[m.ToolCallID]
	if !ok {
		return nil, fmt.Errorf("tool_call_id %q matches no earlier assistant tool call", m.ToolCallID)
	}
	texts, err := textParts(m.Content)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	for _, p := range texts {
		sb.WriteString(p.Text)
	}
	resp, ok := jsonObject(sb.String())
	if !ok {
		resp, err = marshal(map[string]string{"content": sb.String()})
		if err != nil {
			return nil, err
		}
	}
	return []Part{{FunctionResponse: &FunctionResponse{Name: name, Response: resp}}}, nil
}

// convertGeneration maps sampling parameters; nil when none is set.
func convertGeneration(req *openai.ChatRequest) (*GenerationConfig, error) {
	stop, err := openai.StopWords(req.Stop)
	if err != nil {
		return nil, fmt.Errorf("stop: want a string or an array of strings: %w", err)
	}
	g := GenerationConfig{
		Temperature:     req.Temperature,
		TopP:            req.TopP,
		MaxOutputTokens: req.MaxTokens,
		StopSequences:   stop,
	}
	// max_completion_tokens replaced max_tokens in OpenAI's API; it wins
	// when a client sends both.
	if req.MaxCompletionTokens != nil {
		g.MaxOutputTokens = req.MaxCompletionTokens
	}
	if g.Temperature == nil && g.TopP == nil && g.MaxOutputTokens == nil && len(g.StopSequences) == 0 {
		return nil, nil
	}
	return &g, nil
}

// marshal encodes v as compact JSON without escaping <, > and &, so text
// reaches the model as the client wrote it.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
