package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Dialect is the Anthropic Messages upstream (channel type 14): OpenAI chat
// calls are converted, /v1/messages passes through (relay/dialect).
type Dialect struct{}

var (
	_ dialect.Dialect         = Dialect{}
	_ dialect.Native          = Dialect{}
	_ dialect.HeaderForwarder = Dialect{}
)

// Authorize sends the key as x-api-key, with the anthropic-version these
// types follow (an Anthropic client's own version replaces it:
// ForwardHeaders).
func (Dialect) Authorize(req *http.Request, key string, _ []byte) error {
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", Version)
	return nil
}

// ChatRequest is req as a Messages request for model.
func (Dialect) ChatRequest(baseURL string, req *openai.ChatRequest, model string) (string, []byte, error) {
	payload, err := FromChatRequest(req, model)
	if err != nil {
		return "", nil, err
	}
	body, err := json.Marshal(payload)
	return Endpoint(baseURL), body, err
}

// DecodeChat reads a Messages answer as a chat completion.
func (Dialect) DecodeChat(raw []byte, model, _ string, created int64) (*openai.ChatResponse, openai.Usage, error) {
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, openai.Usage{}, err
	}
	return ToChatResponse(&r, model, created), UsageOf(&r), nil
}

// ChatStream reads a Messages stream as chat chunks.
func (Dialect) ChatStream(body io.Reader, model, _ string, created int64) openai.ChunkSource {
	return &chunkSource{rd: sse.NewReader(body, openai.MaxStreamEvent), s: NewChatStream(model, created)}
}

// MayRefuseKey: Anthropic refuses a key with 401, or 403 and an
// authentication_error.
func (Dialect) MayRefuseKey(status int) bool { return status == http.StatusForbidden }

// KeyRefused: permission_error is per resource (a model, a feature); only
// an authentication_error condemns the key.
func (Dialect) KeyRefused(_ int, body []byte) bool {
	e, ok := openai.ParseErrorEnvelope(body)
	return ok && e.Error.Type == "authentication_error"
}

// NativeAPI: /v1/messages passes through.
func (Dialect) NativeAPI() string { return "anthropic" }

// NativeURL is the Messages route path (/v1/messages, or a route under it:
// /v1/messages/count_tokens) under baseURL.
func (Dialect) NativeURL(baseURL, path, _ string, _ bool) string {
	return Endpoint(baseURL) + strings.TrimPrefix(path, "/v1/messages")
}

// ForwardHeaders passes an Anthropic client's anthropic-version and
// anthropic-beta on; a converted OpenAI call gets the relay's version.
func (Dialect) ForwardHeaders(dst, src http.Header, native bool) {
	if !native {
		return
	}
	if v := src.Get("anthropic-version"); v != "" {
		dst.Set("anthropic-version", v)
	}
	if beta := src.Get("anthropic-beta"); beta != "" {
		dst.Set("anthropic-beta", beta)
	}
}

type chunkSource struct {
	rd *sse.Reader
	s  *ChatStream
}

// Next skips ping events: they carry nothing, and a stream of nothing but
// pings is idle (the relay's StreamIdleTimeoutSeconds counts from the last
// event Next returned).
func (s *chunkSource) Next() ([]openai.ChatChunk, bool, error) {
	for {
		ev, err := s.rd.Next()
		if err == io.EOF {
			if s.s.Done() {
				return nil, true, nil
			}
			return nil, false, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, false, err
		}
		if ev.Name == EventPing {
			continue
		}
		chunks, err := s.s.Convert(ev)
		return chunks, false, err
	}
}

func (s *chunkSource) Usage() openai.Usage { return s.s.Usage() }
func (s *chunkSource) Final() bool         { return s.s.Final() }
