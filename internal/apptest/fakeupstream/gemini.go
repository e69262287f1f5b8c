package fakeupstream

import "encoding/json"

// geminiUsage is usageMetadata with candidates output tokens so far; nil
// with OmitUsage. Like Gemini's proto JSON, it leaves out zero counts.
func (x *exchange) geminiUsage(candidates int64) obj {
	b := x.b
	if b.OmitUsage {
		return nil
	}
	u := obj{
		"promptTokenCount":    b.PromptTokens,
		"totalTokenCount":     b.PromptTokens + candidates,
		"promptTokensDetails": []any{obj{"modality": "TEXT", "tokenCount": b.PromptTokens}},
	}
	if candidates > 0 {
		u["candidatesTokenCount"] = candidates
	}
	if b.CachedTokens > 0 {
		u["cachedContentTokenCount"] = b.CachedTokens
		u["cacheTokensDetails"] = []any{obj{"modality": "TEXT", "tokenCount": b.CachedTokens}}
	}
	return u
}

// geminiResponse builds a GenerateResponse with one candidate; finish is
// empty while a stream goes on.
func (x *exchange) geminiResponse(parts []any, finish string, usage obj) obj {
	c := obj{"content": obj{"parts": parts, "role": "model"}, "index": 0}
	if finish != "" {
		c["finishReason"] = finish
	}
	r := obj{"candidates": []any{c}, "modelVersion": x.model, "responseId": x.id("fake-response-")}
	if usage != nil {
		r["usageMetadata"] = usage
	}
	return r
}

// geminiParts are the parts of the whole answer.
func (x *exchange) geminiParts() []any {
	if tc := x.b.ToolCall; tc != nil {
		return []any{obj{"functionCall": obj{"name": tc.Name, "args": json.RawMessage(tc.arguments())}}}
	}
	return []any{obj{"text": x.b.Reply}}
}

// generate answers POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent. A stream sends the text in pieces (a function
// call whole, as Gemini does), each event with the running usage, then a
// last event with the finish reason and the exact usage.
func generate(x *exchange) error {
	if !x.stream {
		return x.json(x.geminiResponse(x.geminiParts(), "STOP", x.geminiUsage(x.b.CompletionTokens)))
	}
	st := x.startStream()
	var events [][]any
	if x.b.ToolCall != nil {
		events = [][]any{x.geminiParts()}
	} else {
		for _, p := range split(x.b.Reply, x.b.Chunks) {
			events = append(events, []any{obj{"text": p}})
		}
	}
	total := x.b.CompletionTokens
	for i, parts := range events {
		soFar := total * int64(i+1) / int64(len(events)+1)
		if err := st.content("", x.geminiResponse(parts, "", x.geminiUsage(soFar))); err != nil {
			return err
		}
	}
	last := x.geminiResponse([]any{obj{"text": ""}}, "STOP", x.geminiUsage(total))
	if err := st.send("", last); err != nil {
		return err
	}
	return st.end()
}
