package fakecloud

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// converseBody is the Converse request as the fake checks it: unknown
// members anywhere in it are refused, as Bedrock's strict schema does.
type converseBody struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int     `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice map[string]json.RawMessage `json:"toolChoice"`
	} `json:"toolConfig"`
}

// block is one Converse content block, checked to hold exactly one kind.
type block struct {
	Text  *string `json:"text"`
	Image *struct {
		Format string `json:"format"`
		Source struct {
			Bytes []byte `json:"bytes"`
		} `json:"source"`
	} `json:"image"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text *string         `json:"text"`
			JSON json.RawMessage `json:"json"`
		} `json:"content"`
		Status string `json:"status"`
	} `json:"toolResult"`
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// toAnthropic checks a Converse body and translates it to an Anthropic
// Messages body for the backend.
func toAnthropic(raw []byte, model string, stream bool) ([]byte, error) {
	var c converseBody
	if err := strictDecode(raw, &c); err != nil {
		return nil, fmt.Errorf("Malformed input request: %v", err)
	}
	if len(c.Messages) == 0 {
		return nil, fmt.Errorf("The messages field is required.")
	}
	msgs := []map[string]any{}
	hasTools := false
	for i, m := range c.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("messages.%d.role: must be user or assistant", i)
		}
		if (i == 0 && m.Role != "user") || (i > 0 && m.Role == c.Messages[i-1].Role) {
			return nil, fmt.Errorf("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		var content []map[string]any
		for _, rb := range m.Content {
			c, tool, err := anthropicBlock(rb)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content: %v", i, err)
			}
			hasTools = hasTools || tool
			content = append(content, c)
		}
		msgs = append(msgs, map[string]any{"role": m.Role, "content": content})
	}
	out := map[string]any{"model": model, "messages": msgs, "stream": stream, "max_tokens": 4096}
	if hasTools && c.ToolConfig == nil {
		return nil, fmt.Errorf("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
	var system []string
	for _, s := range c.System {
		system = append(system, s.Text)
	}
	if len(system) > 0 {
		out["system"] = strings.Join(system, "\n")
	}
	if ic := c.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			out["max_tokens"] = *ic.MaxTokens
		}
		if ic.Temperature != nil {
			out["temperature"] = *ic.Temperature
		}
		if ic.TopP != nil {
			out["top_p"] = *ic.TopP
		}
		if len(ic.StopSequences) > 0 {
			out["stop_sequences"] = ic.StopSequences
		}
	}
	if tc := c.ToolConfig; tc != nil {
		var tools []map[string]any
		for _, t := range tc.Tools {
			tools = append(tools, map[string]any{"name": t.ToolSpec.Name, "description": t.ToolSpec.Description, "input_schema": t.ToolSpec.InputSchema.JSON})
		}
		out["tools"] = tools
		switch {
		case tc.ToolChoice["any"] != nil:
			out["tool_choice"] = map[string]any{"type": "any"}
		case tc.ToolChoice["tool"] != nil:
			var named struct{ Name string }
			_ = json.Unmarshal(tc.ToolChoice["tool"], &named)
			out["tool_choice"] = map[string]any{"type": "tool", "name": named.Name}
		}
	}
	return json.Marshal(out)
}

// anthropicBlock translates one Converse content block; tool says it is a
// toolUse or toolResult.
func anthropicBlock(raw json.RawMessage) (c map[string]any, tool bool, err error) {
	var b block
	if err := strictDecode(raw, &b); err != nil {
		return nil, false, err
	}
	switch {
	case b.Text != nil:
		return map[string]any{"type": "text", "text": *b.Text}, false, nil
	case b.Image != nil:
		return map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": "image/" + b.Image.Format, "data": base64.StdEncoding.EncodeToString(b.Image.Source.Bytes)}}, false, nil
	case b.ToolUse != nil:
		return map[string]any{"type": "tool_use", "id": b.ToolUse.ToolUseID, "name": b.ToolUse.Name, "input": b.ToolUse.Input}, true, nil
	case b.ToolResult != nil:
		var text strings.Builder
		for _, p := range b.ToolResult.Content {
			if p.Text != nil {
				text.WriteString(*p.Text)
			} else {
				text.Write(p.JSON)
			}
		}
		return map[string]any{"type": "tool_result", "tool_use_id": b.ToolResult.ToolUseID, "content": text.String()}, true, nil
	}
	return nil, false, fmt.Errorf("a content block must hold one of text, image, toolUse, toolResult")
}

// converse serves Converse and ConverseStream.
func (b *Bedrock) converse(stream bool) bedrockHandler {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		fwd, err := toAnthropic(body, r.PathValue("model"), stream)
		if err != nil {
			bedrockError(w, http.StatusBadRequest, "ValidationException", err.Error())
			return
		}
		h := http.Header{"X-Api-Key": {b.backendKey}, "Anthropic-Version": {"2023-06-01"}}
		resp, err := backendCall(r, b.backend, "/v1/messages", h, fwd)
		if err != nil {
			bedrockError(w, http.StatusInternalServerError, "InternalServerException", err.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			passBackendError(w, resp)
			return
		}
		defer resp.Body.Close()
		if !stream {
			var m anthropicMessage
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				bedrockError(w, http.StatusInternalServerError, "InternalServerException", err.Error())
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{
				"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": converseContent(m.Content)}},
				"stopReason": m.StopReason,
				"usage":      converseUsage(m.Usage, m.Usage.OutputTokens),
				"metrics":    map[string]int{"latencyMs": 1},
			})
			return
		}
		b.streamConverse(w, sse.NewReader(resp.Body, 1<<20))
	}
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type anthropicMessage struct {
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      anthropicUsage `json:"usage"`
}

func converseContent(content []struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}) []any {
	var out []any
	for _, c := range content {
		switch c.Type {
		case "text":
			out = append(out, map[string]any{"text": c.Text})
		case "tool_use":
			out = append(out, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": c.Input}})
		}
	}
	return out
}

// converseUsage reports Bedrock's usage: inputTokens without the cache's
// reads and writes, which have their own fields.
func converseUsage(u anthropicUsage, output int64) map[string]int64 {
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens + output
	m := map[string]int64{"inputTokens": u.InputTokens, "outputTokens": output, "totalTokens": total}
	if u.CacheReadInputTokens > 0 {
		m["cacheReadInputTokens"] = u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens > 0 {
		m["cacheWriteInputTokens"] = u.CacheCreationInputTokens
	}
	return m
}

// streamConverse translates the backend's Anthropic events into Converse
// stream events, each framed as its own event type.
func (b *Bedrock) streamConverse(w http.ResponseWriter, events *sse.Reader) {
	_, exception := b.settings()
	out := newFrameWriter(w)
	var usage anthropicUsage
	send := func(eventType string, v map[string]any) bool {
		v["p"] = "abcdefghij" // Bedrock pads events to hide their sizes
		payload, _ := json.Marshal(v)
		return out.event(eventType, payload) == nil
	}
	for n := 0; ; n++ {
		ev, err := events.Next()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		var e struct {
			Index   int `json:"index"`
			Message struct {
				Usage anthropicUsage `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage anthropicUsage `json:"usage"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		ok := true
		switch ev.Name {
		case "message_start":
			usage = e.Message.Usage
			ok = send("messageStart", map[string]any{"role": "assistant"})
		case "content_block_start":
			if e.ContentBlock.Type == "tool_use" {
				ok = send("contentBlockStart", map[string]any{"contentBlockIndex": e.Index,
					"start": map[string]any{"toolUse": map[string]any{"toolUseId": e.ContentBlock.ID, "name": e.ContentBlock.Name}}})
			}
		case "content_block_delta":
			delta := map[string]any{"text": e.Delta.Text}
			if e.Delta.Type == "input_json_delta" {
				delta = map[string]any{"toolUse": map[string]any{"input": e.Delta.PartialJSON}}
			}
			ok = send("contentBlockDelta", map[string]any{"contentBlockIndex": e.Index, "delta": delta})
		case "content_block_stop":
			ok = send("contentBlockStop", map[string]any{"contentBlockIndex": e.Index})
		case "message_delta":
			usage.OutputTokens = e.Usage.OutputTokens
			ok = send("messageStop", map[string]any{"stopReason": e.Delta.StopReason})
		case "message_stop":
			send("metadata", map[string]any{"usage": converseUsage(usage, usage.OutputTokens), "metrics": map[string]int{"latencyMs": 1}})
			return
		}
		if !ok {
			return
		}
		if exception != "" && n == 0 {
			_ = out.exception(exception, "Too many requests, please wait before trying again.")
			return
		}
	}
}
