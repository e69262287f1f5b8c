package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// ConverseResponse is the answer of Converse.
type ConverseResponse struct {
	Output struct {
		Message *Message `json:"message"`
	} `json:"output"`
	StopReason string         `json:"stopReason"`
	Usage      *ConverseUsage `json:"usage"`
}

// ConverseUsage is Bedrock's token count. InputTokens excludes the tokens
// read from or written to the prompt cache, which it counts apart.
type ConverseUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// OpenAIUsage converts the usage to OpenAI's terms, where the prompt counts
// every input token, cache reads (cached_tokens) and writes included.
// Counts are upstream input: a negative one reads as 0 and sums saturate,
// so a broken answer can neither wrap a bill around nor make it negative.
func (u *ConverseUsage) OpenAIUsage() openai.Usage {
	if u == nil {
		return openai.Usage{}
	}
	input, read, write, output := atLeast0(u.InputTokens), atLeast0(u.CacheReadInputTokens), atLeast0(u.CacheWriteInputTokens), atLeast0(u.OutputTokens)
	prompt := add(add(input, read), write)
	out := openai.Usage{
		PromptTokens:     prompt,
		CompletionTokens: output,
		TotalTokens:      add(prompt, output),
		CacheWriteTokens: write,
	}
	if read > 0 {
		out.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: read}
	}
	return out
}

func atLeast0(n int64) int64 { return max(n, 0) }

// add adds two non-negative counts, saturating at math.MaxInt64.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ToChatResponse converts a Converse answer into an OpenAI chat completion
// with the given model name, id and creation time. Reasoning blocks are
// left out (OpenAI's chat has no place for them); their tokens are in the
// output count.
func ToChatResponse(resp *ConverseResponse, model, id string, created int64) (*openai.ChatResponse, error) {
	if resp.Output.Message == nil {
		return nil, fmt.Errorf("bedrock converse: answer without output message (stopReason %q)", resp.StopReason)
	}
	var text strings.Builder
	var calls []openai.ToolCall
	for _, b := range resp.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
		case b.ToolUse != nil:
			calls = append(calls, openai.ToolCall{
				ID:       b.ToolUse.ToolUseID,
				Type:     "function",
				Function: openai.FunctionCall{Name: b.ToolUse.Name, Arguments: compact(b.ToolUse.Input)},
			})
		}
	}
	msg := openai.Message{Role: "assistant", ToolCalls: calls}
	if text.Len() > 0 || len(calls) == 0 {
		msg.Content = openai.TextContent(text.String())
	}
	usage := resp.Usage.OpenAIUsage()
	return &openai.ChatResponse{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []openai.Choice{{Message: msg, FinishReason: finishReason(resp.StopReason)}},
		Usage:   &usage,
	}, nil
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// finishReason maps Converse's stopReason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence
}
