package fakeupstream

import "encoding/json"

// anthropicUsage is a Messages API usage object with outputTokens as the
// output; nil with OmitUsage. Anthropic counts cached prompt tokens apart
// from input_tokens.
func (x *exchange) anthropicUsage(outputTokens int64) obj {
	b := x.b
	if b.OmitUsage {
		return nil
	}
	written := b.CacheWriteTokens + b.CacheWrite1hTokens
	u := obj{
		"input_tokens":                max(b.PromptTokens-b.CachedTokens-written, 0),
		"cache_creation_input_tokens": written,
		"cache_read_input_tokens":     b.CachedTokens,
		"output_tokens":               outputTokens,
	}
	if written > 0 {
		u["cache_creation"] = obj{"ephemeral_5m_input_tokens": b.CacheWriteTokens, "ephemeral_1h_input_tokens": b.CacheWrite1hTokens}
	}
	return u
}

// anthropicBlock is the finished content block, and the stop reason it
// ends the message with.
func (x *exchange) anthropicBlock() (obj, string) {
	if tc := x.b.ToolCall; tc != nil {
		return obj{"type": "tool_use", "id": x.id("toolu_fake"), "name": tc.Name, "input": json.RawMessage(tc.arguments())}, "tool_use"
	}
	return obj{"type": "text", "text": x.b.Reply}, "end_turn"
}

// message builds a Messages API message.
func (x *exchange) message(content []any, stop any, usage obj) obj {
	m := obj{
		"id": x.id("msg_fake"), "type": "message", "role": "assistant", "model": x.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
	}
	if usage != nil {
		m["usage"] = usage
	}
	return m
}

// countTokens answers POST /v1/messages/count_tokens: {"input_tokens": N}
// with N the Behavior's PromptTokens, the whole prompt (the endpoint knows
// no cache).
func countTokens(x *exchange) error {
	x.w.Header().Set("request-id", x.id("req_fake"))
	return x.json(obj{"input_tokens": max(x.b.PromptTokens, 0)})
}

// messages answers POST /v1/messages.
func messages(x *exchange) error {
	x.w.Header().Set("request-id", x.id("req_fake"))
	block, stop := x.anthropicBlock()
	if !x.stream {
		return x.json(x.message([]any{block}, stop, x.anthropicUsage(x.b.CompletionTokens)))
	}
	st := x.startStream()
	send := func(content bool, typ string, ev obj) error {
		ev["type"] = typ
		if content {
			return st.content(typ, ev)
		}
		return st.send(typ, ev)
	}
	// message_start reports the input and a first output token, as
	// Anthropic does; message_delta has the final output count.
	start := x.message([]any{}, nil, x.anthropicUsage(min(1, x.b.CompletionTokens)))
	if err := send(false, "message_start", obj{"message": start}); err != nil {
		return err
	}
	opening, deltaType, deltaField := obj{"type": "text", "text": ""}, "text_delta", "text"
	if block["type"] == "tool_use" {
		opening = obj{"type": "tool_use", "id": block["id"], "name": block["name"], "input": obj{}}
		deltaType, deltaField = "input_json_delta", "partial_json"
	}
	if err := send(false, "content_block_start", obj{"index": 0, "content_block": opening}); err != nil {
		return err
	}
	if err := send(false, "ping", obj{}); err != nil {
		return err
	}
	for _, p := range x.pieces() {
		ev := obj{"index": 0, "delta": obj{"type": deltaType, deltaField: p}}
		if err := send(true, "content_block_delta", ev); err != nil {
			return err
		}
	}
	if err := send(false, "content_block_stop", obj{"index": 0}); err != nil {
		return err
	}
	delta := obj{"delta": obj{"stop_reason": stop, "stop_sequence": nil}}
	if !x.b.OmitUsage {
		delta["usage"] = obj{"output_tokens": x.b.CompletionTokens}
	}
	if err := x.sleep(x.b.UsageDelay); err != nil {
		return err
	}
	if err := send(false, "message_delta", delta); err != nil {
		return err
	}
	return send(false, "message_stop", obj{})
}
