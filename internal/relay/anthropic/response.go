package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// ToChatResponse converts a Messages API response to an OpenAI chat
// completion named model (the upstream's model when empty) and created at
// the given Unix time. Text blocks are concatenated, tool_use blocks become
// tool calls, thinking is dropped.
func ToChatResponse(resp *Response, model string, created int64) *openai.ChatResponse {
	if model == "" {
		model = resp.Model
	}
	var (
		text  strings.Builder
		calls []openai.ToolCall
	)
	for _, b := range resp.Content {
		switch b.Type {
		case BlockText:
			text.WriteString(b.Text)
		case BlockToolUse:
			calls = append(calls, openai.ToolCall{
				ID:       b.ID,
				Type:     "function",
				Function: openai.FunctionCall{Name: b.Name, Arguments: compactInput(b.Input)},
			})
		}
	}
	msg := openai.Message{Role: "assistant", ToolCalls: calls}
	// OpenAI sends content null on a message that only calls tools.
	if text.Len() > 0 || len(calls) == 0 {
		msg.Content = openai.TextContent(text.String())
	} else {
		msg.Content = json.RawMessage("null")
	}
	usage := UsageOf(resp)
	return &openai.ChatResponse{
		ID:      resp.ID,
		Object:  "chat.completion",
		Created: created,
		Model:   model,
		Choices: []openai.Choice{{Message: msg, FinishReason: finishReason(deref(resp.StopReason))}},
		Usage:   &usage,
	}
}

// UsageOf returns a response's usage the OpenAI way: prompt tokens include
// the tokens read from and written to cache, and the ones read are cached.
// The ones written are CacheWrite1hTokens for the 1-hour part of the split,
// CacheWriteTokens for the rest (docs/decisions/pricing-cache-tiers.md).
func UsageOf(resp *Response) openai.Usage {
	return chatUsage(resp.Usage)
}

func chatUsage(u Usage) openai.Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	written := max(u.CacheCreationInputTokens, 0)
	// cache_creation_input_tokens is the total, and the one Anthropic bills
	// with: the split only says which of those tokens went to a 1-hour
	// entry. A split that disagrees with the total (message_delta may
	// update the total alone) can thus neither add tokens nor drop any.
	var hour int64
	if u.CacheCreation != nil {
		hour = min(max(u.CacheCreation.Ephemeral1hInputTokens, 0), written)
	}
	return openai.Usage{
		PromptTokens:        prompt,
		CompletionTokens:    u.OutputTokens,
		TotalTokens:         prompt + u.OutputTokens,
		PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens},
		CacheWriteTokens:    written - hour,
		CacheWrite1hTokens:  hour,
	}
}

// finishReason maps an Anthropic stop reason to an OpenAI finish reason.
func finishReason(stop string) string {
	switch stop {
	case StopMaxTokens, StopContextExceeded:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopRefusal:
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn and any newer reason
}

// FromChatResponse converts an OpenAI chat completion to a Messages API
// response named model (the upstream's when empty), from choice 0.
func FromChatResponse(resp *openai.ChatResponse, model string) *Response {
	if model == "" {
		model = resp.Model
	}
	out := &Response{ID: resp.ID, Type: "message", Role: "assistant", Model: model, Content: Content{}}
	finish := ""
	if len(resp.Choices) > 0 {
		c := resp.Choices[0]
		finish = c.FinishReason
		// A content that is neither a string nor parts gives no text.
		parts, _ := openai.Parts(c.Message.Content)
		var text strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				text.WriteString(p.Text)
			}
		}
		if text.Len() > 0 {
			out.Content = append(out.Content, Block{Type: BlockText, Text: text.String()})
		}
		for _, tc := range c.Message.ToolCalls {
			out.Content = append(out.Content, Block{
				Type: BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: inputObject(tc.Function.Arguments),
			})
		}
	}
	stop := stopReason(finish, hasToolUse(out.Content))
	out.StopReason = &stop
	if resp.Usage != nil {
		out.Usage = messagesUsage(*resp.Usage)
	}
	return out
}

// inputObject parses tool call arguments into a tool_use input, which must
// be an object. Arguments that are not a JSON object are kept, as a string,
// under the key "raw" so the client sees what the model produced.
func inputObject(args string) json.RawMessage {
	input, err := argumentsObject(args)
	if err != nil {
		input, _ = json.Marshal(map[string]string{"raw": args})
	}
	return input
}

func hasToolUse(c Content) bool {
	for _, b := range c {
		if b.Type == BlockToolUse {
			return true
		}
	}
	return false
}

// stopReason maps an OpenAI finish reason to an Anthropic stop reason. Some
// OpenAI-compatible servers finish with "stop" after calling tools; clients
// of Anthropic look for tool_use to run them, so calls win.
func stopReason(finish string, calledTools bool) string {
	switch finish {
	case "length":
		return StopMaxTokens
	case "tool_calls", "function_call":
		return StopToolUse
	}
	if calledTools {
		return StopToolUse
	}
	return StopEndTurn // stop, content_filter, absent
}

// messagesUsage splits OpenAI usage the Anthropic way: input tokens exclude
// the cached ones and the ones written to cache (which only an Anthropic
// answer converted to OpenAI carries).
func messagesUsage(u openai.Usage) Usage {
	cached, written := u.Cached(), u.CacheWriteTokens+u.CacheWrite1hTokens
	out := Usage{
		InputTokens:              max(u.PromptTokens-cached-written, 0),
		CacheReadInputTokens:     cached,
		CacheCreationInputTokens: written,
		OutputTokens:             u.CompletionTokens,
	}
	if written > 0 {
		out.CacheCreation = &CacheCreation{Ephemeral5mInputTokens: u.CacheWriteTokens, Ephemeral1hInputTokens: u.CacheWrite1hTokens}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
