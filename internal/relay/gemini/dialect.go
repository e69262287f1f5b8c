package gemini

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Dialect is the Gemini generateContent upstream (channel type 24): every
// call it serves is a converted chat call (relay/dialect).
type Dialect struct{}

var _ dialect.Dialect = Dialect{}

// Authorize sends the key in Google's API key header.
func (Dialect) Authorize(req *http.Request, key string, _ []byte) error {
	req.Header.Set(APIKeyHeader, key)
	return nil
}

// ChatRequest is req as a generateContent request for model; the model
// is in the URL.
func (Dialect) ChatRequest(baseURL string, req *openai.ChatRequest, model string) (string, []byte, error) {
	payload, err := FromChatRequest(req)
	if err != nil {
		return "", nil, err
	}
	body, err := json.Marshal(payload)
	return Endpoint(baseURL, model, req.Stream), body, err
}

// DecodeChat reads a generateContent answer as a chat completion; a
// blocked prompt is a *BlockedError (a dialect.ClientError).
func (Dialect) DecodeChat(raw []byte, model, id string, created int64) (*openai.ChatResponse, openai.Usage, error) {
	var r GenerateResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, openai.Usage{}, err
	}
	out, err := ToChatResponse(&r, model, "chatcmpl-"+id, created)
	if err != nil {
		return nil, openai.Usage{}, err
	}
	return out, UsageOf(&r), nil
}

// ChatStream reads a streamGenerateContent stream as chat chunks.
func (Dialect) ChatStream(body io.Reader, model, id string, created int64) openai.ChunkSource {
	return &chunkSource{rd: sse.NewReader(body, openai.MaxStreamEvent), s: NewChatStream(model, "chatcmpl-"+id, created)}
}

// MayRefuseKey: Google refuses a key with 401, or 400 or 403 and a reason
// of keyReasons.
func (Dialect) MayRefuseKey(status int) bool {
	return status == http.StatusForbidden || status == http.StatusBadRequest
}

// keyReasons are the ErrorInfo reasons with which Google refuses a key, or
// the project behind it, for every request.
var keyReasons = map[string]bool{
	"API_KEY_INVALID":               true,
	"API_KEY_SERVICE_BLOCKED":       true,
	"API_KEY_IP_ADDRESS_BLOCKED":    true,
	"API_KEY_HTTP_REFERRER_BLOCKED": true,
	"SERVICE_DISABLED":              true,
	"CONSUMER_SUSPENDED":            true,
}

// KeyRefused reports a detail whose reason is in keyReasons.
func (Dialect) KeyRefused(_ int, body []byte) bool {
	e, ok := openai.ParseErrorEnvelope(body)
	if !ok {
		return false
	}
	for _, detail := range e.Error.Details {
		if keyReasons[detail.Reason] {
			return true
		}
	}
	return false
}

type chunkSource struct {
	rd *sse.Reader
	s  *ChatStream
}

func (s *chunkSource) Next() ([]openai.ChatChunk, bool, error) {
	ev, err := s.rd.Next()
	if err == io.EOF {
		return nil, true, nil // Gemini closes the stream after its last event
	}
	if err != nil {
		return nil, false, err
	}
	chunks, err := s.s.Convert(ev.Data)
	return chunks, false, err
}

func (s *chunkSource) Usage() openai.Usage { return s.s.Usage() }

// Final is false until the stream ends: Gemini's totals are running ones,
// exact only on the last event.
func (s *chunkSource) Final() bool { return false }
