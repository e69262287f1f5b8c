package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/refusal"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Dialect is AWS Bedrock for the relay (docs/relay.md, "Adding a
// provider"). The registered value is unbound; Bind gives each channel its
// own, holding its endpoint and signing credentials. Claude models speak
// the Anthropic Messages API natively through invoke (Framed: the body
// without model and stream, the answer's event stream turned into SSE);
// every other model is a converted chat call through Converse.
type Dialect struct{ ch *Channel }

var (
	_ dialect.Dialect         = Dialect{}
	_ dialect.Binder          = Dialect{}
	_ dialect.Native          = Dialect{}
	_ dialect.Framed          = Dialect{}
	_ dialect.StreamMediaType = Dialect{}
)

var errUnbound = errors.New("bedrock: channel fields not bound")

// EventStreamType is the Content-Type of Bedrock's streamed answers.
const EventStreamType = "application/vnd.amazon.eventstream"

// Bind validates the channel's fields (New) and returns its dialect.
func (Dialect) Bind(baseURL, key, _ string) (dialect.Dialect, error) {
	ch, err := New(baseURL, key)
	if err != nil {
		return nil, err
	}
	return Dialect{ch: ch}, nil
}

// Authorize signs the request with SigV4 over its body. Headers the relay
// adds afterwards (Accept, X-Request-Id) are not signed, which AWS allows.
//
// key is the attempt's key of the channel's pool; it must be of the
// bound key's region (the endpoint is the region's).
func (d Dialect) Authorize(req *http.Request, key string, body []byte) error {
	if d.ch == nil {
		return errUnbound
	}
	creds := d.ch.creds
	if key != "" {
		var err error
		if creds, err = ParseKey(key); err != nil {
			return err
		}
		if creds.Region != d.ch.creds.Region {
			return errors.New("bedrock: a pool key of another region than the channel's first key")
		}
	}
	return d.ch.signWith(context.WithoutCancel(req.Context()), req, body, creds)
}

// ChatRequest is a Claude model's Messages body through invoke, or any
// other model's Converse body.
func (d Dialect) ChatRequest(_ string, req *openai.ChatRequest, model string) (string, []byte, error) {
	if d.ch == nil {
		return "", nil, errUnbound
	}
	if IsAnthropic(model) {
		_, body, err := anthropic.Dialect{}.ChatRequest("", req, model)
		if err != nil {
			return "", nil, err
		}
		if body, err = MessagesBody(body, nil); err != nil {
			return "", nil, err
		}
		op := Invoke
		if req.Stream {
			op = InvokeStream
		}
		u, err := d.ch.URL(op, model)
		return u, body, err
	}
	conv, err := FromChatRequest(req)
	if err != nil {
		return "", nil, err
	}
	body, err := json.Marshal(conv)
	if err != nil {
		return "", nil, err
	}
	op := Converse
	if req.Stream {
		op = ConverseStream
	}
	u, err := d.ch.URL(op, model)
	return u, body, err
}

// DecodeChat reads a Converse answer (it has "output") or a Claude one.
func (Dialect) DecodeChat(raw []byte, model, id string, created int64) (*openai.ChatResponse, openai.Usage, error) {
	var probe struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, openai.Usage{}, err
	}
	if probe.Output == nil {
		return anthropic.Dialect{}.DecodeChat(raw, model, id, created)
	}
	var r ConverseResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, openai.Usage{}, err
	}
	out, err := ToChatResponse(&r, model, "chatcmpl-"+id, created)
	if err != nil {
		return nil, openai.Usage{}, err
	}
	var u openai.Usage
	if r.Usage != nil {
		u = r.Usage.OpenAIUsage()
	}
	return out, u, nil
}

// ChatStream reads an event stream: Claude's (chunk frames carrying
// Anthropic events) or Converse's, told apart by the first event frame.
func (Dialect) ChatStream(body io.Reader, model, id string, created int64) openai.ChunkSource {
	return &chunkSource{frames: NewStreamReader(body, openai.MaxStreamEvent), model: model, id: id, created: created}
}

// MayRefuseKey: Bedrock refuses credentials with 403 (signature, unknown
// or expired key, access denied); 401 is never used by it but refuses too.
func (Dialect) MayRefuseKey(status int) bool { return status == http.StatusForbidden }

// KeyRefused classifies by the body (the relay does not pass headers):
// Bedrock's 403s all concern the credentials, except an AccessDenied for
// one model the account has not been granted, told by its message.
func (Dialect) KeyRefused(status int, body []byte) bool {
	e := classifyException("", status, body)
	return e.Kind == refusal.Key && !modelAccessDenied(e.Message)
}

func (Dialect) NativeAPI() string { return "anthropic" }

// NativeURL is invoke (or invoke-with-response-stream) of the model.
func (d Dialect) NativeURL(_, _, model string, stream bool) string {
	if d.ch == nil {
		return ""
	}
	op := Invoke
	if stream {
		op = InvokeStream
	}
	u, err := d.ch.URL(op, model)
	if err != nil {
		return d.ch.base.String()
	}
	return u
}

// NativeModel: only Claude takes the Messages body.
func (Dialect) NativeModel(model string) bool { return IsAnthropic(model) }

// PassthroughBody is MessagesBody with the client's anthropic-beta values.
func (Dialect) PassthroughBody(body []byte, header http.Header, _ bool) ([]byte, error) {
	return MessagesBody(body, header.Values("Anthropic-Beta"))
}

// SSE turns invoke-with-response-stream's frames into Anthropic's events.
func (Dialect) SSE(body io.Reader) io.Reader {
	return &sseReader{events: NewAnthropicStream(body, openai.MaxStreamEvent)}
}

func (Dialect) StreamMediaType() string { return EventStreamType }

// sseReader writes each Anthropic event of the stream as server-sent
// event text; a broken stream (cut frame, exception frame) is its error.
type sseReader struct {
	events *AnthropicStream
	buf    bytes.Buffer
	err    error
}

func (r *sseReader) Read(p []byte) (int, error) {
	for r.buf.Len() == 0 {
		if r.err != nil {
			return 0, r.err
		}
		ev, err := r.events.Next()
		if err != nil {
			r.err = err
			continue
		}
		sse.Write(&r.buf, ev.Name, ev.Data)
	}
	return r.buf.Read(p)
}

// chunkSource converts either kind of stream into OpenAI chunks.
type chunkSource struct {
	frames  *StreamReader
	model   string
	id      string
	created int64

	claude   *anthropic.ChatStream // set by the first chunk frame
	converse *ChatStream           // set by the first other event frame
}

func (s *chunkSource) Next() ([]openai.ChatChunk, bool, error) {
	for {
		f, err := s.frames.Next()
		if err == io.EOF {
			if s.claude != nil && s.claude.Done() || s.converse != nil && s.converse.Done() {
				return nil, true, nil
			}
			return nil, false, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, false, err
		}
		if f.EventType == "chunk" && s.converse == nil {
			ev, err := chunkEvent(f.Payload)
			if err != nil {
				return nil, false, err
			}
			if ev.Name == anthropic.EventPing {
				continue // a keep-alive, no progress (the relay's idle timeout)
			}
			if s.claude == nil {
				s.claude = anthropic.NewChatStream(s.model, s.created)
			}
			chunks, err := s.claude.Convert(ev)
			return chunks, false, err
		}
		if s.claude != nil || f.EventType == "" || f.EventType == "initial-response" {
			continue // bookkeeping frames
		}
		if s.converse == nil {
			s.converse = NewChatStream(s.model, "chatcmpl-"+s.id, s.created)
		}
		chunks, err := s.converse.Convert(f.EventType, f.Payload)
		return chunks, false, err
	}
}

func (s *chunkSource) Usage() openai.Usage {
	switch {
	case s.claude != nil:
		return s.claude.Usage()
	case s.converse != nil:
		return s.converse.Usage()
	}
	return openai.Usage{}
}

func (s *chunkSource) Final() bool {
	return s.claude != nil && s.claude.Final() || s.converse != nil && s.converse.HasUsage()
}
