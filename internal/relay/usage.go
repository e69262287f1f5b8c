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
	// cached is the details' cached tokens as scanUsage read them, which
	// sets no details.
	cached int64
}

func (u *wireUsage) usage() pricing.Usage {
	out := pricing.Usage{
		PromptTokens:     u.PromptTokens + u.InputTokens,
		CompletionTokens: u.CompletionTokens + u.OutputTokens,
		CachedTokens:     u.cached,
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
	if !found {
		return pricing.Usage{}, false, true
	}
	wire, ok := scanUsage(val)
	if !ok || !wire.reported() {
		return pricing.Usage{}, false, true
	}
	return wire.usage(), true, true
}

// scanUsage reads the usage object val (valid JSON) as json.Unmarshal into
// a *wireUsage does — names matched case-insensitively, the last of
// duplicates winning, null leaving a count as it is, a value of another
// type (a string, 1.5, 1e3) failing the whole — without reflection or
// allocation. A name with an escape or a non-ASCII byte, which
// encoding/json may match by Unicode case folding, is left to it.
func scanUsage(val []byte) (w wireUsage, ok bool) {
	if isNull(val) {
		return wireUsage{}, true
	}
	if len(val) == 0 || val[0] != '{' {
		return wireUsage{}, false
	}
	// The details as values, so nothing escapes; *Set say a non-null
	// object was read last (the pointer encoding/json would have set).
	var promptCached, inputCached int64
	var promptSet, inputSet bool
	for name, v, next := firstMember(val); name != nil; name, v, next = nextMember(val, next) {
		if !plainName(name) {
			return slowUsage(val)
		}
		ok := true
		switch {
		case bytes.EqualFold(name, []byte("prompt_tokens")):
			ok = scanInt(v, &w.PromptTokens)
		case bytes.EqualFold(name, []byte("completion_tokens")):
			ok = scanInt(v, &w.CompletionTokens)
		case bytes.EqualFold(name, []byte("input_tokens")):
			ok = scanInt(v, &w.InputTokens)
		case bytes.EqualFold(name, []byte("output_tokens")):
			ok = scanInt(v, &w.OutputTokens)
		case bytes.EqualFold(name, []byte("prompt_tokens_details")):
			var slow bool
			ok, slow = scanDetails(v, &promptSet, &promptCached)
			if slow {
				return slowUsage(val)
			}
		case bytes.EqualFold(name, []byte("input_tokens_details")):
			var slow bool
			ok, slow = scanDetails(v, &inputSet, &inputCached)
			if slow {
				return slowUsage(val)
			}
		}
		if !ok {
			return wireUsage{}, false
		}
	}
	w.cached = 0
	if promptSet {
		w.cached += promptCached
	}
	if inputSet {
		w.cached += inputCached
	}
	return w, true
}

// slowUsage is scanUsage by encoding/json.
func slowUsage(val []byte) (wireUsage, bool) {
	var wire *wireUsage
	if json.Unmarshal(val, &wire) != nil {
		return wireUsage{}, false
	}
	if wire == nil {
		return wireUsage{}, true
	}
	return *wire, true
}

// scanDetails reads a prompt_tokens_details or input_tokens_details value:
// null drops the details (encoding/json's nil pointer), an object sets the
// cached tokens it has (a second object adds to the first, as encoding/json
// decodes into the pointer it already set). slow: a name needs
// encoding/json.
func scanDetails(v []byte, set *bool, cached *int64) (ok, slow bool) {
	if isNull(v) {
		*set, *cached = false, 0
		return true, false
	}
	if len(v) == 0 || v[0] != '{' {
		return false, false
	}
	if !*set {
		*set, *cached = true, 0
	}
	for name, m, next := firstMember(v); name != nil; name, m, next = nextMember(v, next) {
		if !plainName(name) {
			return false, true
		}
		if bytes.EqualFold(name, []byte("cached_tokens")) && !scanInt(m, cached) {
			return false, false
		}
	}
	return true, false
}

// scanInt reads a JSON value into an int64 as encoding/json does: null
// leaves it, an integer in range sets it, anything else fails.
func scanInt(v []byte, n *int64) bool {
	if isNull(v) {
		return true
	}
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 {
		return false
	}
	var x uint64
	for _, ch := range digits {
		if ch < '0' || ch > '9' { // a fraction, an exponent, or not a number
			return false
		}
		if x > (1<<63)/10 {
			return false
		}
		x = x*10 + uint64(ch-'0')
	}
	switch {
	case neg && x <= 1<<63:
		*n = -int64(x-1) - 1 // -(1<<63) fits, its negation does not
	case !neg && x < 1<<63:
		*n = int64(x)
	default:
		return false
	}
	return true
}

func isNull(v []byte) bool { return string(v) == "null" }

// plainName reports a member name (quoted) without escapes or non-ASCII
// bytes: one bytes.EqualFold matches as encoding/json does.
func plainName(name []byte) bool {
	for _, ch := range name {
		if ch == '\\' || ch >= 0x80 {
			return false
		}
	}
	return true
}

// firstMember and nextMember walk the members of the object obj (valid
// JSON): the name without its quotes, the value, and where the next member
// starts; name is nil after the last.
func firstMember(obj []byte) (name, val []byte, next int) {
	return nextMember(obj, skipSpace(obj, 1))
}

func nextMember(obj []byte, i int) (name, val []byte, next int) {
	if i >= len(obj) || obj[i] != '"' {
		return nil, nil, len(obj)
	}
	end := stringEnd(obj, i)
	start := skipSpace(obj, skipSpace(obj, end)+1)
	stop := valueEnd(obj, start)
	next = skipSpace(obj, stop)
	if next < len(obj) && obj[next] == ',' {
		next = skipSpace(obj, next+1)
	}
	return obj[i+1 : end-1], obj[start:stop], next
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
