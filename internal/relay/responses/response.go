package responses

import (
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Response is a Responses API response object, as answered to a
// non-streamed call and carried by the stream's response.* events.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"` // "response"
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"` // in_progress, completed, incomplete, failed
	Error              *Error            `json:"error"`
	IncompleteDetails  *IncompleteDetail `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []Item            `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []Tool            `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *Usage            `json:"usage"`
	User               *string           `json:"user"`
	Metadata           json.RawMessage   `json:"metadata"`
}

// Error is a failed response's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetail says why a response stopped early.
type IncompleteDetail struct {
	Reason string `json:"reason"` // max_output_tokens, content_filter
}

// Item is one output item: a message or a function call.
type Item struct {
	Type   string `json:"type"` // "message" or "function_call"
	ID     string `json:"id"`
	Status string `json:"status"` // in_progress, completed, incomplete
	// message
	Role    string        `json:"role,omitempty"`
	Content *[]OutputText `json:"content,omitempty"`
	// function_call
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// OutputText is a message's content part.
type OutputText struct {
	Type        string   `json:"type"` // "output_text"
	Text        string   `json:"text"`
	Annotations []string `json:"annotations"` // always empty
}

// Usage is the Responses API's usage: input includes cached tokens, output
// includes reasoning tokens.
type Usage struct {
	InputTokens         int64        `json:"input_tokens"`
	InputTokensDetails  InputDetail  `json:"input_tokens_details"`
	OutputTokens        int64        `json:"output_tokens"`
	OutputTokensDetails OutputDetail `json:"output_tokens_details"`
	TotalTokens         int64        `json:"total_tokens"`
}

// InputDetail breaks down input tokens.
type InputDetail struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputDetail breaks down output tokens. The chat hub carries no
// reasoning count, so converted answers report 0 (their reasoning, where
// the upstream has any, is counted in output_tokens as the upstream bills
// it).
type OutputDetail struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// UsageOf is the chat usage u in Responses terms. Cache writes (an
// Anthropic upstream's) are prompt tokens the chat usage already counts.
func UsageOf(u openai.Usage) *Usage {
	return &Usage{InputTokens: u.PromptTokens, InputTokensDetails: InputDetail{CachedTokens: u.Cached()},
		OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}

// IDs: every id of one call derives from the relay's request id, so a
// stream and a JSON answer of one call would name the same items.
func responseID(id string) string       { return "resp_" + id }
func messageID(id string, n int) string { return "msg_" + id + "_" + strconv.Itoa(n) }
func callItemID(id string, n int) string {
	return "fc_" + id + "_" + strconv.Itoa(n)
}

// newResponse is the response object for in, before any output.
func newResponse(in *Request, model, id string, created int64) Response {
	r := Response{ID: responseID(id), Object: "response", CreatedAt: created, Status: "in_progress",
		MaxOutputTokens: in.MaxOutputTokens, Model: model, Output: []Item{}, ParallelToolCalls: true,
		Reasoning: json.RawMessage(`{"effort":null,"summary":null}`), Temperature: in.Temperature,
		Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: in.ToolChoice, Tools: in.Tools,
		TopP: in.TopP, Truncation: "disabled", Metadata: in.Metadata}
	if in.Instructions != "" {
		s := in.Instructions
		r.Instructions = &s
	}
	if in.ParallelToolCalls != nil {
		r.ParallelToolCalls = *in.ParallelToolCalls
	}
	if in.User != "" {
		u := in.User
		r.User = &u
	}
	if len(r.ToolChoice) == 0 {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Tools == nil {
		r.Tools = []Tool{}
	}
	if len(r.Metadata) == 0 || string(r.Metadata) == "null" {
		r.Metadata = json.RawMessage(`{}`)
	}
	return r
}

// finishStatus is the response status and incomplete reason of a chat
// finish_reason.
func finishStatus(finish string) (string, *IncompleteDetail) {
	switch finish {
	case "length":
		return "incomplete", &IncompleteDetail{Reason: "max_output_tokens"}
	case "content_filter":
		return "incomplete", &IncompleteDetail{Reason: "content_filter"}
	}
	return "completed", nil
}

// FromChatResponse converts a complete chat answer (choice 0) to a
// Response for in, with usage u; id is the relay's request id.
func FromChatResponse(in *Request, chat *openai.ChatResponse, u openai.Usage, model, id string, created int64) *Response {
	r := newResponse(in, model, id, created)
	if len(chat.Choices) > 0 {
		ch := chat.Choices[0]
		status, detail := finishStatus(ch.FinishReason)
		r.Status, r.IncompleteDetails = status, detail
		parts, _ := openai.Parts(ch.Message.Content)
		var text string
		for _, p := range parts {
			text += p.Text
		}
		if text != "" {
			r.Output = append(r.Output, messageItem(messageID(id, len(r.Output)), text, status))
		}
		for _, tc := range ch.Message.ToolCalls {
			n := len(r.Output)
			r.Output = append(r.Output, callItem(callItemID(id, n), callID(tc.ID, id, n), tc.Function.Name,
				orEmptyObject(tc.Function.Arguments), "completed"))
		}
	} else {
		r.Status = "completed"
	}
	r.Usage = UsageOf(u)
	return &r
}

// callID is the call_id of a function call: the upstream's own id (the
// client sends it back in function_call_output, and the upstream matches
// its tool result by it), or one made up when the upstream gave none.
func callID(upstream, id string, n int) string {
	if upstream != "" {
		return upstream
	}
	return "call_" + id + "_" + strconv.Itoa(n)
}

func messageItem(id, text, status string) Item {
	content := []OutputText{{Type: "output_text", Text: text, Annotations: []string{}}}
	return Item{Type: "message", ID: id, Status: status, Role: "assistant", Content: &content}
}

func callItem(id, callID, name, args, status string) Item {
	return Item{Type: "function_call", ID: id, Status: status, CallID: callID, Name: name, Arguments: &args}
}
