package bedrock

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// ErrFrameTooLarge is returned for an event-stream frame over the reader's
// bound (the SDK's decoder has none of its own).
var ErrFrameTooLarge = errors.New("bedrock: event stream frame too large")

// Frame is one message of an AWS event stream (the framing of Bedrock's
// streamed answers: a length prelude, typed headers, a payload, CRC32s).
type Frame struct {
	// MessageType is "event", "exception" (a modeled error named by
	// ExceptionType) or "error" (ErrorCode).
	MessageType   string
	EventType     string // ":event-type": chunk, messageStart, contentBlockDelta…
	ExceptionType string // ":exception-type": throttlingException…
	ErrorCode     string // ":error-code"
	// Payload is valid until the next call of Next: the reader reuses it.
	Payload []byte
}

// StreamReader reads frames from an event stream. It validates each
// frame's checksums with the AWS SDK's decoder and bounds its size. A frame
// may arrive split over any number of reads.
type StreamReader struct {
	r   *bufio.Reader
	dec *eventstream.Decoder
	max int
	buf []byte
}

// NewStreamReader reads frames of at most maxFrame bytes from r.
func NewStreamReader(r io.Reader, maxFrame int) *StreamReader {
	return &StreamReader{r: bufio.NewReaderSize(r, 16<<10), dec: eventstream.NewDecoder(), max: maxFrame}
}

// Next returns the next event frame. It returns io.EOF at a clean end (no
// byte of a next frame; whether the answer was complete is for the events
// to say: message_stop, messageStop), io.ErrUnexpectedEOF for a stream cut inside a
// frame, and a *refusal.Error for an exception or error frame, which is how
// Bedrock reports a failure after the 200 status (throttling, a model
// timeout, a validation error of the model).
func (s *StreamReader) Next() (Frame, error) {
	prelude, err := s.r.Peek(8)
	switch {
	case err == io.EOF && len(prelude) == 0:
		return Frame{}, io.EOF
	case err == io.EOF:
		return Frame{}, io.ErrUnexpectedEOF
	case err != nil: // a cut connection: keep what the transport said
		return Frame{}, fmt.Errorf("bedrock: read event stream: %w", err)
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headers := binary.BigEndian.Uint32(prelude[4:8])
	if total < 16 || headers > total-16 {
		return Frame{}, fmt.Errorf("bedrock: malformed event stream prelude (length %d, headers %d)", total, headers)
	}
	if int64(total) > int64(s.max) {
		return Frame{}, ErrFrameTooLarge
	}
	m, err := s.dec.Decode(s.r, s.buf[:0])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("bedrock: decode event stream: %w", err)
	}
	s.buf = m.Payload
	f := Frame{
		MessageType:   header(m, ":message-type"),
		EventType:     header(m, ":event-type"),
		ExceptionType: header(m, ":exception-type"),
		ErrorCode:     header(m, ":error-code"),
		Payload:       m.Payload,
	}
	switch f.MessageType {
	case "exception":
		return Frame{}, classifyException(f.ExceptionType, 0, f.Payload)
	case "error":
		return Frame{}, classifyException(f.ErrorCode, 0, []byte(`{"message":`+quote(header(m, ":error-message"))+`}`))
	}
	return f, nil
}

func header(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		if s, ok := v.Get().(string); ok {
			return s
		}
	}
	return ""
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// AnthropicStream reads the answer of invoke-with-response-stream for a
// Claude model: each "chunk" frame carries {"bytes": base64 of one
// Anthropic Messages stream event}. It yields those events as the SSE
// events Anthropic's own API would send (name = the event's "type"), so the
// Anthropic dialect's stream readers and usage accounting apply unchanged.
type AnthropicStream struct {
	frames  *StreamReader
	metrics *InvocationMetrics
}

// InvocationMetrics is what Bedrock adds to the last event of a stream
// ("amazon-bedrock-invocationMetrics" of message_stop): its own count of
// the call's tokens.
type InvocationMetrics struct {
	InputTokenCount      int64 `json:"inputTokenCount"`
	OutputTokenCount     int64 `json:"outputTokenCount"`
	CacheReadInputTokens int64 `json:"cacheReadInputTokenCount"`
	CacheWriteInputToken int64 `json:"cacheWriteInputTokenCount"`
}

// NewAnthropicStream reads Anthropic events from an event stream body;
// maxFrame bounds one frame.
func NewAnthropicStream(r io.Reader, maxFrame int) *AnthropicStream {
	return &AnthropicStream{frames: NewStreamReader(r, maxFrame)}
}

// Next returns the next Anthropic event. Its Data is valid until the next
// call. Errors are those of StreamReader.Next, or a malformed chunk.
func (a *AnthropicStream) Next() (sse.Event, error) {
	for {
		f, err := a.frames.Next()
		if err != nil {
			return sse.Event{}, err
		}
		if f.EventType != "chunk" {
			continue // initial-response and other bookkeeping frames
		}
		ev, err := chunkEvent(f.Payload)
		if err != nil {
			return sse.Event{}, err
		}
		if m := metricsOf(ev.Data); m != nil {
			a.metrics = m
		}
		return ev, nil
	}
}

// chunkEvent decodes a chunk frame's payload, {"bytes": base64 of one
// Anthropic event}, into that event.
func chunkEvent(payload []byte) (sse.Event, error) {
	var chunk struct {
		Bytes []byte `json:"bytes"` // base64 in JSON
	}
	if err := json.Unmarshal(payload, &chunk); err != nil {
		return sse.Event{}, fmt.Errorf("bedrock: decode chunk: %w", err)
	}
	if !utf8.Valid(chunk.Bytes) {
		return sse.Event{}, errors.New("bedrock: chunk event is not valid UTF-8")
	}
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(chunk.Bytes, &ev); err != nil || ev.Type == "" {
		return sse.Event{}, fmt.Errorf("bedrock: chunk is not an Anthropic event: %q", truncate(chunk.Bytes))
	}
	return sse.Event{Name: ev.Type, Data: chunk.Bytes}, nil
}

// metricsOf reads Bedrock's invocation metrics of an event (message_stop).
func metricsOf(data []byte) *InvocationMetrics {
	var ev struct {
		Metrics *InvocationMetrics `json:"amazon-bedrock-invocationMetrics"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	return ev.Metrics
}

// Metrics returns Bedrock's invocation metrics once the last event was
// read, nil before (or when Bedrock sent none).
func (a *AnthropicStream) Metrics() *InvocationMetrics { return a.metrics }

func truncate(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
