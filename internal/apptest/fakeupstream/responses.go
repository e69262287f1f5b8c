package fakeupstream

import (
	"strings"
	"time"
)

// responsesUsage is a Responses API usage object; nil with OmitUsage.
func (x *exchange) responsesUsage() obj {
	b := x.b
	if b.OmitUsage {
		return nil
	}
	return obj{
		"input_tokens":          b.PromptTokens,
		"input_tokens_details":  obj{"cached_tokens": b.CachedTokens},
		"output_tokens":         b.CompletionTokens,
		"output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens":          b.PromptTokens + b.CompletionTokens,
	}
}

// response builds a Responses API response object.
func (x *exchange) response(status string, output []any, usage obj, created int64) obj {
	r := obj{
		"id": x.id("resp_fake"), "object": "response", "created_at": created, "status": status,
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil,
		"model": x.model, "output": output, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": obj{"effort": nil, "summary": nil}, "store": true, "temperature": 1.0,
		"text": obj{"format": obj{"type": "text"}}, "tool_choice": "auto", "tools": []any{},
		"top_p": 1.0, "truncation": "disabled", "user": nil, "metadata": obj{},
	}
	if usage != nil || status != "completed" {
		r["usage"] = usage // null while in progress, as OpenAI sends it
	}
	return r
}

// outputItem is the finished output item: a message, or a function call.
func (x *exchange) outputItem() obj {
	if tc := x.b.ToolCall; tc != nil {
		return obj{
			"type": "function_call", "id": x.id("fc_fake"), "call_id": x.id("call_fake"),
			"name": tc.Name, "arguments": tc.arguments(), "status": "completed",
		}
	}
	return obj{
		"type": "message", "id": x.id("msg_fake"), "status": "completed", "role": "assistant",
		"content": []any{x.textPart(x.b.Reply)},
	}
}

func (x *exchange) textPart(text string) obj {
	return obj{"type": "output_text", "text": text, "annotations": []any{}}
}

// responses answers POST /v1/responses.
func responses(x *exchange) error {
	created := time.Now().Unix()
	if !x.stream {
		return x.json(x.response("completed", []any{x.outputItem()}, x.responsesUsage(), created))
	}
	st := x.startStream()
	seq := 0
	emit := func(content bool, typ string, fields obj) error {
		ev := obj{"type": typ, "sequence_number": seq}
		for k, v := range fields {
			ev[k] = v
		}
		seq++
		if content {
			return st.content(typ, ev)
		}
		return st.send(typ, ev)
	}
	pending := x.response("in_progress", []any{}, nil, created)
	if err := emit(false, "response.created", obj{"response": pending}); err != nil {
		return err
	}
	if err := emit(false, "response.in_progress", obj{"response": pending}); err != nil {
		return err
	}
	item := x.outputItem()
	if err := x.streamItem(item, emit); err != nil {
		return err
	}
	if err := emit(false, "response.output_item.done", obj{"output_index": 0, "item": item}); err != nil {
		return err
	}
	done := x.response("completed", []any{item}, x.responsesUsage(), created)
	if err := emit(false, "response.completed", obj{"response": done}); err != nil {
		return err
	}
	return st.end()
}

// streamItem streams the events that build item: added, deltas, done.
func (x *exchange) streamItem(item obj, emit func(bool, string, obj) error) error {
	id := item["id"]
	added := obj{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	if x.b.ToolCall != nil {
		added["arguments"] = ""
		if err := emit(false, "response.output_item.added", obj{"output_index": 0, "item": added}); err != nil {
			return err
		}
		for _, p := range x.pieces() {
			if err := emit(true, "response.function_call_arguments.delta", obj{"item_id": id, "output_index": 0, "delta": p}); err != nil {
				return err
			}
		}
		return emit(false, "response.function_call_arguments.done", obj{"item_id": id, "output_index": 0, "arguments": item["arguments"]})
	}
	added["content"] = []any{}
	at := obj{"item_id": id, "output_index": 0, "content_index": 0}
	with := func(k string, v any) obj {
		f := obj{k: v}
		for k, v := range at {
			f[k] = v
		}
		return f
	}
	if err := emit(false, "response.output_item.added", obj{"output_index": 0, "item": added}); err != nil {
		return err
	}
	if err := emit(false, "response.content_part.added", with("part", x.textPart(""))); err != nil {
		return err
	}
	var text strings.Builder
	for _, p := range x.pieces() {
		text.WriteString(p)
		ev := with("delta", p)
		ev["logprobs"] = []any{}
		if err := emit(true, "response.output_text.delta", ev); err != nil {
			return err
		}
	}
	if err := emit(false, "response.output_text.done", with("text", text.String())); err != nil {
		return err
	}
	return emit(false, "response.content_part.done", with("part", x.textPart(text.String())))
}
