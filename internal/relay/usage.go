package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// wireUsage covers both OpenAI usage shapes: chat and completions
// (prompt/completion tokens) and the Responses API (input/output tokens).
type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *wireUsage) usage() pricing.Usage {
	out := pricing.Usage{
		PromptTokens:     u.PromptTokens + u.InputTokens,
		CompletionTokens: u.CompletionTokens + u.OutputTokens,
	}
	if u.PromptTokensDetails != nil {
		out.CachedTokens += u.PromptTokensDetails.CachedTokens
	}
	if u.InputTokensDetails != nil {
		out.CachedTokens += u.InputTokensDetails.CachedTokens
	}
	return out
}

func (u *wireUsage) reported() bool {
	return u != nil && (u.PromptTokens+u.CompletionTokens+u.InputTokens+u.OutputTokens > 0)
}

// billedUsage is what an answer's usage, in the OpenAI form every dialect
// is converted to, bills: the whole prompt, its cache reads and writes, the
// completion.
func billedUsage(u openai.Usage) pricing.Usage {
	return pricing.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.Cached(),
		CacheWriteTokens: u.CacheWriteTokens, CacheWrite1hTokens: u.CacheWrite1hTokens}
}

// usageFromJSON reads the usage of a complete answer.
func usageFromJSON(kind usageKind, raw []byte) (pricing.Usage, bool) {
	u, ok, _ := decodeUsage(kind, raw)
	return u, ok
}

// decodeUsage reads the usage of a complete answer and says whether it
// found raw to be JSON (checked; false also when it did not look), so a
// caller that must refuse anything but JSON need not scan the answer a
// second time (copyJSON). After one validating scan, only the top-level
// usage member is decoded: decoding the whole answer to find it cost a
// second full pass on every call.
func decodeUsage(kind usageKind, raw []byte) (u pricing.Usage, ok, checked bool) {
	if kind == usageNone || !hasObjectField(raw, `"usage"`) || !json.Valid(raw) {
		return pricing.Usage{}, false, false
	}
	val, found := memberValue(raw, `"usage"`)
	var wire *wireUsage
	if !found || json.Unmarshal(val, &wire) != nil || !wire.reported() {
		return pricing.Usage{}, false, true
	}
	return wire.usage(), true, true
}

// memberValue returns the value of the member named key (quoted, exactly
// as written in raw) of the top-level object raw, which must be valid JSON.
// Like encoding/json, the last of duplicate members wins.
func memberValue(raw []byte, key string) (val []byte, found bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	// Member by member: name, colon, value, then a comma or the end.
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '"'; {
		end := stringEnd(raw, i)
		start := skipSpace(raw, skipSpace(raw, end)+1)
		stop := valueEnd(raw, start)
		if string(raw[i:end]) == key {
			val, found = raw[start:stop], true
		}
		if i = skipSpace(raw, stop); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return val, found
}

// stringEnd returns the index just past the string that starts with the
// quote at raw[i].
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// valueEnd returns the index just past the JSON value starting at raw[i].
func valueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case '"':
				j = stringEnd(raw, j) - 1
			}
		}
		return len(raw)
	}
	j := i // a number, true, false or null
	for j < len(raw) && strings.IndexByte(",}] \t\r\n", raw[j]) < 0 {
		j++
	}
	return j
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// usageFromEvent reads usage from a stream event: the usage chunk of chat
// and completions streams, or response.completed of the Responses API. The
// substring test keeps the common content chunk from being decoded.
func usageFromEvent(kind usageKind, ev sse.Event) (pricing.Usage, bool) {
	switch kind {
	case usageChat:
		return usageFromJSON(kind, ev.Data)
	case usageResponses:
		if ev.Name != "response.completed" && !bytes.Contains(ev.Data, []byte(`"response.completed"`)) {
			return pricing.Usage{}, false
		}
		var body struct {
			Response struct {
				Usage *wireUsage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(ev.Data, &body) != nil || !body.Response.Usage.reported() {
			return pricing.Usage{}, false
		}
		return body.Response.Usage.usage(), true
	}
	return pricing.Usage{}, false
}

// hasObjectField reports whether raw has field name (quoted) with an object
// value: chunks that carry "usage":null, as many upstreams send on every
// chunk, are not decoded.
func hasObjectField(raw []byte, name string) bool {
	for {
		i := bytes.Index(raw, []byte(name))
		if i < 0 {
			return false
		}
		rest := bytes.TrimLeft(raw[i+len(name):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			if rest = bytes.TrimLeft(rest[1:], " \t\r\n"); len(rest) > 0 && rest[0] == '{' {
				return true
			}
		}
		raw = raw[i+len(name):]
	}
}

// Keys whose string values are text a model reads or writes, for counting
// tokens locally: promptKeys in requests, completionKeys in answers.
var (
	promptKeys     = map[string]bool{"content": true, "text": true, "prompt": true, "input": true, "instructions": true, "system": true, "arguments": true}
	completionKeys = map[string]bool{"content": true, "text": true, "delta": true, "refusal": true, "arguments": true, "partial_json": true}
)

// collectText concatenates the string values of the given keys anywhere in
// a JSON document (strings inside arrays under such a key count too),
// separated by one space. Nothing is added before the first or after the
// last: a stream's deltas, collected event by event, must join into exactly
// the text they are pieces of, or every piece would count an extra token.
func collectText(raw []byte, keys map[string]bool) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out strings.Builder
	var stack []bool // per open container: is it an object?
	var inKey []bool // per open container: does it sit under a wanted key?
	expectKey, wanted := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return out.String()
		}
		under := len(inKey) > 0 && inKey[len(inKey)-1]
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, v == '{')
				inKey = append(inKey, wanted || under)
				wanted = false
			default:
				stack, inKey = stack[:len(stack)-1], inKey[:len(inKey)-1]
			}
		case string:
			if len(stack) > 0 && stack[len(stack)-1] && expectKey {
				wanted = keys[v]
				expectKey = false
				continue
			}
			if (wanted || (under && !stack[len(stack)-1])) && v != "" {
				if out.Len() > 0 {
					out.WriteByte(' ')
				}
				out.WriteString(v)
			}
			wanted = false
		default:
			wanted = false
		}
		expectKey = len(stack) > 0 && stack[len(stack)-1]
	}
}
