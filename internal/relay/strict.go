package relay

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Strict billing (docs/architecture.md, Money; docs/decisions/relay-billing.md):
// a call never costs more than it held, so no balance or key quota goes below
// zero.

// Prompt bound parameters: a fixed allowance for the reply priming and
// framing tokens, and one per image or inline media part, whose cost does
// not show in the body's size.
const (
	promptOverhead  = 16
	mediaPartTokens = 2048
)

var (
	// Where base64 payloads start: data: URLs (OpenAI image_url, input_file)
	// and "data" values (Anthropic image and document sources, OpenAI
	// input_audio).
	payloadMarkers = [][]byte{[]byte(";base64,"), []byte(`"data":"`)}
	// Media part types, each part worth mediaPartTokens: images of every
	// dialect (OpenAI "image_url", Responses "input_image", Anthropic
	// "image"), audio, files and documents. Counted as values only (a key
	// of the same name is followed by a colon), so a part counts once.
	mediaTypes = [][]byte{[]byte(`"image_url"`), []byte(`"input_image"`), []byte(`"image"`), []byte(`"input_audio"`),
		[]byte(`"input_file"`), []byte(`"file"`), []byte(`"document"`)}
)

// minPayload is the least length of a "data" value taken as a base64
// payload: shorter ones are counted as text.
const minPayload = 1024

// promptTokenBound is an upper bound of the prompt's tokens, cheap to
// compute: every token of the byte-level BPE tokenizers upstreams use
// covers at least one byte of text, and the JSON body holds every byte of
// the text (escapes only add bytes), so the body's length bounds the
// text's tokens. Base64 payloads are not text: their bytes are left out and
// each media part gets mediaPartTokens instead, about the most a
// high-detail image costs at OpenAI and Anthropic. Media whose cost grows
// with its size (PDF pages, audio) or sits behind a URL can still cost
// more than the bound; the settlement cap catches that.
func promptTokenBound(body []byte) int64 {
	n := int64(len(body))
	for _, marker := range payloadMarkers {
		for rest := body; ; {
			i := bytes.Index(rest, marker)
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			run := base64Run(rest)
			// A payload is a whole JSON string: it ends at an unescaped quote.
			ends := run < len(rest) && rest[run] == '"' && (run == 0 || rest[run-1] != '\\')
			if ends && (marker[0] == ';' || run >= minPayload) {
				n -= int64(run)
			}
			rest = rest[run:]
		}
	}
	return n + countValues(body, mediaTypes)*mediaPartTokens + promptOverhead
}

// countValues counts the JSON strings among values that body holds as
// values, not as keys.
func countValues(body []byte, values [][]byte) int64 {
	var n int64
	for _, v := range values {
		for rest := body; ; {
			i := bytes.Index(rest, v)
			if i < 0 {
				break
			}
			rest = rest[i+len(v):]
			if next := bytes.TrimLeft(rest, " \t\r\n"); len(next) == 0 || next[0] != ':' {
				n++
			}
		}
	}
	return n
}

// base64Run is the length of the base64 text (with JSON-escaped line
// breaks and slashes) at the start of b.
func base64Run(b []byte) int {
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/', c == '=', c == '\\':
		default:
			return i
		}
	}
	return len(b)
}

// completionField is the body field that limits the completion of this
// call upstream: the one the client used, else the endpoint's own, and for
// chat max_completion_tokens on reasoning models (reasoning: they refuse
// max_tokens) and max_tokens elsewhere (which every OpenAI-compatible
// server knows).
func (c *call) completionField(body []byte, reasoning bool) string {
	switch {
	case c.ep.usage == usageResponses:
		return "max_output_tokens"
	case c.ep != epChat:
		return "max_tokens" // completions, Anthropic Messages
	case bytes.Contains(body, []byte(`"max_completion_tokens"`)):
		return "max_completion_tokens"
	case bytes.Contains(body, []byte(`"max_tokens"`)):
		return "max_tokens"
	case reasoning:
		return "max_completion_tokens"
	}
	return "max_tokens"
}

// bodyField is a top-level field withFields sets: its name and its
// value's JSON.
type bodyField struct {
	name  string
	value []byte
}

// includeUsage is stream_options asking a stream for its usage.
var includeUsage = []byte(`{"include_usage":true}`)

// withFields returns body with top-level fields set (at most 8). When none
// of them is in the body yet they are put first, in the order of their
// names, without decoding it (the common case: a stream's usage request, a
// completion limit), else the body is re-encoded. set is only read: its
// values may live on the caller's stack.
func withFields(body []byte, set []bodyField) ([]byte, error) {
	var order [8]int
	if len(set) > len(order) {
		panic("relay: withFields sets at most 8 fields")
	}
	size := len(body) + len(set)
	for i, f := range set {
		if hasName(body, f.name) {
			m := make(map[string]any, len(set))
			for _, f := range set {
				m[strings.Clone(f.name)] = json.RawMessage(bytes.Clone(f.value))
			}
			return rewriteJSON(body, m)
		}
		size += len(f.name) + 3 + len(f.value)
		j := i // insertion sort of the names, for the order of the fields
		for ; j > 0 && set[order[j-1]].name > f.name; j-- {
			order[j] = order[j-1]
		}
		order[j] = i
	}
	i := bytes.IndexByte(body, '{')
	rest := bytes.TrimLeft(body[i+1:], " \t\r\n")
	out := make([]byte, 0, size)
	out = append(out, body[:i+1]...)
	for k, j := range order[:len(set)] {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), set[j].name...), `":`...), set[j].value...)
	}
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[i+1:]...), nil
}

// hasName reports whether body holds name in quotes, as
// bytes.Contains(body, `"name"`) without building that text.
func hasName(body []byte, name string) bool {
	for off := 0; ; {
		i := bytes.Index(body[off:], []byte(name))
		if i < 0 {
			return false
		}
		i += off
		if i > 0 && i+len(name) < len(body) && body[i-1] == '"' && body[i+len(name)] == '"' {
			return true
		}
		off = i + 1
	}
}
