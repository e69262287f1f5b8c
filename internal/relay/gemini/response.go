package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// BlockedError reports a prompt Gemini refused to answer at all
// (promptFeedback.blockReason, no candidates). It is the client's doing, so
// the relay answers it as a bad request rather than an upstream failure.
type BlockedError struct {
	Reason string // such as SAFETY, BLOCKLIST, PROHIBITED_CONTENT, OTHER
}

func (e *BlockedError) Error() string {
	return "prompt blocked by gemini: " + e.Reason
}

// ClientError marks the error as the request's (dialect.ClientError).
func (e *BlockedError) ClientError() bool { return true }

// ToChatResponse converts candidate 0 of a generateContent response into an
// OpenAI chat completion with the given model, id and creation time. Thought
// parts are dropped; parts other than text and function calls (such as
// generated images) have no OpenAI counterpart and are dropped too. A blocked
// prompt returns a *BlockedError.
func ToChatResponse(resp *GenerateResponse, model string, id string, created int64) (*openai.ChatResponse, error) {
	if resp == nil {
		return nil, errors.New("convert gemini response: no response")
	}
	if len(resp.Candidates) == 0 {
		if resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "" {
			return nil, &BlockedError{Reason: resp.PromptFeedback.BlockReason}
		}
		return nil, errors.New("convert gemini response: no candidates")
	}
	c := resp.Candidates[0]
	text, calls := answer(c.Content.Parts, id, 0)
	msg := openai.Message{Role: "assistant", ToolCalls: calls}
	if text != "" || len(calls) == 0 {
		msg.Content = openai.TextContent(text)
	} else {
		// OpenAI sends content null on a message that only calls tools.
		msg.Content = json.RawMessage("null")
	}
	usage := UsageOf(resp)
	return &openai.ChatResponse{
		ID:      id,
		Object:  "chat.completion",
		Created: created,
		Model:   model,
		Choices: []openai.Choice{{
			Index:        0,
			Message:      msg,
			FinishReason: finishReason(c.FinishReason, len(calls) > 0),
		}},
		Usage: &usage,
	}, nil
}

// answer splits parts into the answer's text and its tool calls, numbered
// from next. Thoughts and parts of other kinds are skipped.
func answer(parts []Part, id string, next int) (string, []openai.ToolCall) {
	var (
		sb    strings.Builder
		calls []openai.ToolCall
	)
	for _, p := range parts {
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			calls = append(calls, openai.ToolCall{
				ID:   withSignature(toolCallID(id, next), p.ThoughtSignature),
				Type: "function",
				Function: openai.FunctionCall{
					Name:      p.FunctionCall.Name,
					Arguments: compactArgs(p.FunctionCall.Args),
				},
			})
			next++
		default:
			sb.WriteString(p.Text)
		}
	}
	return sb.String(), calls
}

// toolCallID names the n-th call of a completion. Gemini's calls carry no
// id, and clients echo ours back as tool_call_id; deriving it from the
// completion id keeps it unique across the turns of a conversation.
func toolCallID(id string, n int) string {
	if id == "" {
		return fmt.Sprintf("call_%d", n)
	}
	return fmt.Sprintf("call_%s_%d", strings.TrimPrefix(id, "chatcmpl-"), n)
}

// signatureMark separates a tool call id from the thought signature it
// carries. Gemini 3 models attach an opaque thoughtSignature to function
// calls and refuse a replayed history without it; the OpenAI dialect has no
// field for it, but clients echo tool call ids back verbatim, so the id
// carries it (base64url: the id stays within [A-Za-z0-9_-]).
const signatureMark = "__ts__"

// withSignature appends a thought signature to a tool call id.
func withSignature(id, signature string) string {
	if signature == "" {
		return id
	}
	return id + signatureMark + base64.RawURLEncoding.EncodeToString([]byte(signature))
}

// signatureOf recovers the thought signature a tool call id carries, or "".
func signatureOf(id string) string {
	i := strings.LastIndex(id, signatureMark)
	if i < 0 {
		return ""
	}
	sig, err := base64.RawURLEncoding.DecodeString(id[i+len(signatureMark):])
	if err != nil {
		return ""
	}
	return string(sig)
}

// compactArgs renders a call's args object as OpenAI's arguments string.
func compactArgs(args json.RawMessage) string {
	var buf bytes.Buffer
	if len(args) == 0 || string(args) == "null" || json.Compact(&buf, args) != nil {
		return "{}"
	}
	return buf.String()
}

// finishReason maps a Gemini finish reason onto OpenAI's. A normal stop
// after function calls is "tool_calls", which is what tells OpenAI clients
// to run the tools.
func finishReason(reason string, calledTools bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return "content_filter"
	}
	if calledTools && (reason == "STOP" || reason == "") {
		return "tool_calls"
	}
	return "stop"
}

// UsageOf returns the token usage of a response: completion tokens include
// the model's thinking, which Gemini counts apart but bills as output.
func UsageOf(resp *GenerateResponse) openai.Usage {
	if resp == nil {
		return openai.Usage{}
	}
	return usageOf(resp.UsageMetadata)
}

func usageOf(m *UsageMetadata) openai.Usage {
	if m == nil {
		return openai.Usage{}
	}
	u := openai.Usage{
		PromptTokens:     m.PromptTokenCount,
		CompletionTokens: m.CandidatesTokenCount + m.ThoughtsTokenCount,
		TotalTokens:      m.TotalTokenCount,
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if m.CachedContentTokenCount > 0 {
		u.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: m.CachedContentTokenCount}
	}
	return u
}
