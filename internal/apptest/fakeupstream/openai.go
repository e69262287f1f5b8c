package fakeupstream

import "time"

// fingerprint is the system_fingerprint OpenAI attaches to completions.
const fingerprint = "fp_fakeupstream"

// openAIUsage is a chat completion's usage; nil with OmitUsage.
func (x *exchange) openAIUsage() obj {
	b := x.b
	if b.OmitUsage {
		return nil
	}
	return obj{
		"prompt_tokens":         b.PromptTokens,
		"completion_tokens":     b.CompletionTokens,
		"total_tokens":          b.PromptTokens + b.CompletionTokens,
		"prompt_tokens_details": obj{"cached_tokens": b.CachedTokens, "audio_tokens": 0},
		"completion_tokens_details": obj{
			"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
}

// chat answers POST /v1/chat/completions.
func chat(x *exchange) error {
	if x.stream {
		return chatStream(x)
	}
	msg := obj{"role": "assistant", "content": x.b.Reply, "refusal": nil, "annotations": []any{}}
	finish := "stop"
	if tc := x.b.ToolCall; tc != nil {
		msg["content"] = nil
		msg["tool_calls"] = []any{obj{
			"id":       x.id("call_fake"),
			"type":     "function",
			"function": obj{"name": tc.Name, "arguments": tc.arguments()},
		}}
		finish = "tool_calls"
	}
	resp := obj{
		"id":                 x.id("chatcmpl-fake"),
		"object":             "chat.completion",
		"created":            time.Now().Unix(),
		"model":              x.model,
		"choices":            []any{obj{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"service_tier":       "default",
		"system_fingerprint": fingerprint,
	}
	if u := x.openAIUsage(); u != nil {
		resp["usage"] = u
	}
	return x.json(resp)
}

// chatStream streams a chat completion: a role chunk, the content deltas, a
// finish chunk, the usage chunk when asked for, and [DONE].
func chatStream(x *exchange) error {
	st := x.startStream()
	id, created, withUsage := x.id("chatcmpl-fake"), time.Now().Unix(), x.includeUsage()
	chunk := func(choices []any) obj {
		c := obj{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": x.model,
			"service_tier": "default", "system_fingerprint": fingerprint, "choices": choices,
		}
		if withUsage {
			c["usage"] = nil // OpenAI sends "usage": null on every chunk but the last
		}
		return c
	}
	choice := func(delta obj, finish any) []any {
		return []any{obj{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}

	tc, finish := x.b.ToolCall, "stop"
	first := obj{"role": "assistant", "content": "", "refusal": nil}
	if tc != nil {
		finish = "tool_calls"
		first["content"] = nil
		first["tool_calls"] = []any{obj{
			"index": 0, "id": x.id("call_fake"), "type": "function",
			"function": obj{"name": tc.Name, "arguments": ""},
		}}
	}
	if err := st.send("", chunk(choice(first, nil))); err != nil {
		return err
	}
	for _, p := range x.pieces() {
		delta := obj{"content": p}
		if tc != nil {
			delta = obj{"tool_calls": []any{obj{"index": 0, "function": obj{"arguments": p}}}}
		}
		if err := st.content("", chunk(choice(delta, nil))); err != nil {
			return err
		}
	}
	if err := st.send("", chunk(choice(obj{}, finish))); err != nil {
		return err
	}
	if withUsage {
		last := chunk([]any{})
		last["usage"] = x.openAIUsage()
		if err := x.sleep(x.b.UsageDelay); err != nil {
			return err
		}
		if err := st.send("", last); err != nil {
			return err
		}
	}
	return st.sendRaw("", []byte("[DONE]"))
}

// completion answers the legacy POST /v1/completions, JSON or stream.
func completion(x *exchange) error {
	id, created := x.id("cmpl-fake"), time.Now().Unix()
	usage := func() obj {
		if x.b.OmitUsage {
			return nil
		}
		b := x.b
		return obj{"prompt_tokens": b.PromptTokens, "completion_tokens": b.CompletionTokens, "total_tokens": b.PromptTokens + b.CompletionTokens}
	}
	resp := func(text string, finish any) obj {
		return obj{
			"id": id, "object": "text_completion", "created": created, "model": x.model,
			"system_fingerprint": fingerprint,
			"choices":            []any{obj{"text": text, "index": 0, "logprobs": nil, "finish_reason": finish}},
		}
	}
	if !x.stream {
		r := resp(x.b.Reply, "stop")
		if u := usage(); u != nil {
			r["usage"] = u
		}
		return x.json(r)
	}
	st := x.startStream()
	withUsage := x.includeUsage()
	for _, p := range split(x.b.Reply, x.b.Chunks) {
		if err := st.content("", resp(p, nil)); err != nil {
			return err
		}
	}
	if err := st.send("", resp("", "stop")); err != nil {
		return err
	}
	if withUsage {
		last := resp("", nil)
		last["choices"], last["usage"] = []any{}, usage()
		if err := st.send("", last); err != nil {
			return err
		}
	}
	return st.sendRaw("", []byte("[DONE]"))
}
