package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Dialect is the OpenAI-compatible upstream (channel type 1 and types the
// relay does not know): the hub's own format, so a chat call is the request
// as it is, and every OpenAI route passes through (relay/dialect).
//
// This package cannot name dialect.Dialect (that package imports this
// one); the relay's registration of Dialect{} is its compile-time guard.
type Dialect struct{}

// MaxStreamEvent bounds one server-sent event of a stream a dialect reads.
const MaxStreamEvent = 16 << 20

// Authorize sends the key as a bearer token; a channel without a key (a
// local server) sends none.
func (Dialect) Authorize(req *http.Request, key string, _ []byte) error {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return nil
}

// ChatRequest is req for model at base/v1/chat/completions; a stream asks
// for its usage chunk.
func (Dialect) ChatRequest(baseURL string, req *ChatRequest, model string) (string, []byte, error) {
	out := *req
	out.Model = model
	if out.Stream {
		out.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	body, err := json.Marshal(&out)
	return JoinURL(baseURL, "/v1/chat/completions"), body, err
}

// DecodeChat reads a chat completion; one with neither choices nor usage
// is not one.
func (Dialect) DecodeChat(raw []byte, _, _ string, _ int64) (*ChatResponse, Usage, error) {
	var r ChatResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, Usage{}, err
	}
	if len(r.Choices) == 0 && r.Usage == nil {
		return nil, Usage{}, fmt.Errorf("no choices")
	}
	var usage Usage
	if r.Usage != nil {
		usage = *r.Usage
	}
	return &r, usage, nil
}

// ChatStream reads chat completion chunks up to [DONE].
func (Dialect) ChatStream(body io.Reader, _, _ string, _ int64) ChunkSource {
	return &chunkSource{rd: sse.NewReader(body, MaxStreamEvent)}
}

// MayRefuseKey: OpenAI refuses a key with 401, or 403 and an account code.
func (Dialect) MayRefuseKey(status int) bool { return status == http.StatusForbidden }

// keyCodes are the OpenAI error codes that say the key or its account
// cannot be used by anyone (docs/decisions/channels.md).
var keyCodes = map[string]bool{
	"invalid_api_key":          true,
	"account_deactivated":      true,
	"organization_deactivated": true,
}

// KeyRefused reports an error code of keyCodes.
func (Dialect) KeyRefused(_ int, body []byte) bool {
	e, ok := ParseErrorEnvelope(body)
	if !ok {
		return false
	}
	code, _ := e.Error.Code.(string)
	return keyCodes[code]
}

// NativeAPI: the OpenAI routes pass through.
func (Dialect) NativeAPI() string { return "openai" }

// NativeURL is path under baseURL.
func (Dialect) NativeURL(baseURL, path, _ string, _ bool) string { return JoinURL(baseURL, path) }

// ForwardHeaders passes the client's OpenAI-Organization on.
func (Dialect) ForwardHeaders(dst, src http.Header, _ bool) {
	if org := src.Get("OpenAI-Organization"); org != "" {
		dst.Set("OpenAI-Organization", org)
	}
}

// TakesCompletionTokens reports the reasoning models.
func (Dialect) TakesCompletionTokens(model string) bool { return IsReasoningModel(model) }

// IsReasoningModel reports the OpenAI model families that take only
// max_completion_tokens (o1, o3, o4-mini, gpt-5…), also behind a
// provider prefix ("openai/o3").
func IsReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// JoinURL appends an API path to a channel's base URL without doubling a
// "/v1" the operator already put in the base.
func JoinURL(base, path string) string {
	if strings.HasSuffix(base, "/v1") && strings.HasPrefix(path, "/v1/") {
		return base + strings.TrimPrefix(path, "/v1")
	}
	return base + path
}

// ChunkSource yields an upstream's stream as OpenAI chunks, whatever its
// dialect (relay/dialect: Dialect.ChatStream).
type ChunkSource interface {
	// Next returns the chunks of the next event; done at the stream's
	// proper end; an error when the stream broke or reported an error.
	// It returns only for events that are progress: comments and
	// keep-alive pings are read past (the relay's stream idle timeout
	// counts from the last return).
	Next() (chunks []ChatChunk, done bool, err error)
	Usage() Usage
	// Final reports whether the upstream's final usage report came.
	Final() bool
}

type chunkSource struct {
	rd   *sse.Reader
	u    Usage
	last bool // the usage chunk came
}

func (s *chunkSource) Next() ([]ChatChunk, bool, error) {
	ev, err := s.rd.Next()
	if err == io.EOF {
		return nil, false, io.ErrUnexpectedEOF // an OpenAI stream ends with [DONE]
	}
	if err != nil {
		return nil, false, err
	}
	if string(ev.Data) == "[DONE]" {
		return nil, true, nil
	}
	var chunk ChatChunk
	if err := json.Unmarshal(ev.Data, &chunk); err != nil {
		return nil, false, fmt.Errorf("invalid chunk: %w", err)
	}
	if chunk.Usage != nil {
		s.u, s.last = *chunk.Usage, true
		if len(chunk.Choices) == 0 {
			return nil, false, nil // the relay writes its own usage chunk
		}
		chunk.Usage = nil
	}
	return []ChatChunk{chunk}, false, nil
}

func (s *chunkSource) Usage() Usage { return s.u }
func (s *chunkSource) Final() bool  { return s.last }

// ErrorEnvelope covers the error envelopes of the three first dialects:
// OpenAI's {"error":{"type","code"}}, Anthropic's
// {"type":"error","error":{"type"}} and Google's
// {"error":{"code":403,"status","details":[{"reason"}]}}. It lives in the
// hub because every dialect package imports it.
type ErrorEnvelope struct {
	Error struct {
		Type    string `json:"type"`
		Code    any    `json:"code"` // OpenAI: a string or null; Google: a number
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// ParseErrorEnvelope decodes an error envelope; Google sometimes wraps it
// in an array.
func ParseErrorEnvelope(body []byte) (ErrorEnvelope, bool) {
	body = bytes.TrimSpace(body)
	var e ErrorEnvelope
	if len(body) > 0 && body[0] == '[' {
		var list []ErrorEnvelope
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return e, false
		}
		return list[0], true
	}
	return e, json.Unmarshal(body, &e) == nil
}
