package relay

import (
	"bytes"
	"encoding/json"
	"slices"
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

// withFields returns body with top-level fields set. When none of them is
// in the body yet they are put first without decoding it (the common case:
// a stream's usage request, a completion limit), else the body is
// re-encoded.
func withFields(body []byte, set map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(set))
	for k := range set {
		if bytes.Contains(body, []byte(`"`+k+`"`)) {
			return rewriteJSON(body, set)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var fields []byte // "k1":v1,"k2":v2, injected in one copy of the body
	for i, k := range keys {
		v, err := json.Marshal(set[k])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			fields = append(fields, ',')
		}
		fields = append(append(append(append(fields, '"'), k...), `":`...), v...)
	}
	return injectField(body, string(fields)), nil
}
