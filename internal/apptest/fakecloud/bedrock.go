package fakecloud

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Bedrock is a fake Bedrock Runtime endpoint for one region. It serves
//
//	POST /model/{modelId}/invoke                        Claude: Anthropic body → JSON
//	POST /model/{modelId}/invoke-with-response-stream   Claude: AWS event stream of base64 Anthropic events
//	POST /model/{modelId}/converse                      any model: Converse API
//	POST /model/{modelId}/converse-stream               Converse events in an AWS event stream
//
// Every request's SigV4 signature is recomputed with the known secret
// (verifySigV4) and refused with AWS's exception (403
// UnrecognizedClientException, InvalidSignatureException…) when it does not
// match. Claude bodies are checked as Bedrock checks them (anthropic_version
// bedrock-2023-05-31, no "model", no "stream"), Converse bodies against
// the Converse schema. The model is answered by the backend's Anthropic
// dialect, whose errors come back as Bedrock's exceptions.
type Bedrock struct {
	recorder
	// URL is the endpoint, a channel's base_url.
	URL string

	backend    *fakeupstream.Server
	backendKey string
	creds      AWSCredentials
	region     string

	mu              sync.Mutex
	now             func() time.Time
	streamException string
}

// NewBedrock starts an endpoint of region that accepts creds, answering
// from backend (which accepts backendKey).
func NewBedrock(t testing.TB, backend *fakeupstream.Server, backendKey string, creds AWSCredentials, region string) *Bedrock {
	t.Helper()
	b := &Bedrock{backend: backend, backendKey: backendKey, creds: creds, region: region, now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{model}/invoke", b.admit(b.invoke(false)))
	mux.HandleFunc("POST /model/{model}/invoke-with-response-stream", b.admit(b.invoke(true)))
	mux.HandleFunc("POST /model/{model}/converse", b.admit(b.converse(false)))
	mux.HandleFunc("POST /model/{model}/converse-stream", b.admit(b.converse(true)))
	mux.HandleFunc("/", b.admit(func(w http.ResponseWriter, r *http.Request, _ []byte) {
		bedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b.URL = srv.URL
	return b
}

// SetClock sets the clock signatures are checked against (default
// time.Now): AWS refuses a signature more than 5 minutes off.
func (b *Bedrock) SetClock(now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
}

// SetStreamException makes every following stream send an exception frame
// of that type (e.g. "throttlingException") after its first event, as
// Bedrock reports failures after the 200 status; "" stops it.
func (b *Bedrock) SetStreamException(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streamException = name
}

func (b *Bedrock) settings() (time.Time, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now(), b.streamException
}

type bedrockHandler func(w http.ResponseWriter, r *http.Request, body []byte)

// admit records the request and checks its signature first, as AWS does
// before anything else.
func (b *Bedrock) admit(h bedrockHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r)
		b.record(r, body)
		if err != nil {
			bedrockError(w, http.StatusBadRequest, "SerializationException", err.Error())
			return
		}
		now, _ := b.settings()
		if f := verifySigV4(r, body, b.creds, b.region, "bedrock", now); f != nil {
			bedrockError(w, http.StatusForbidden, f.exception, f.message)
			return
		}
		h(w, r, body)
	}
}

// bedrockError answers as AWS's REST-JSON protocol does: the exception
// name in x-amzn-ErrorType, the message in the body.
func bedrockError(w http.ResponseWriter, status int, exception, message string) {
	w.Header().Set("X-Amzn-Errortype", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	writeJSON(w, status, map[string]string{"message": message})
}

// exceptionOf maps a backend (Anthropic) error status to the exception
// Bedrock answers with.
func exceptionOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "ValidationException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case 529, http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	case http.StatusForbidden:
		return "AccessDeniedException"
	}
	return "InternalServerException"
}

// passBackendError answers a backend error as Bedrock's exception.
func passBackendError(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	status := resp.StatusCode
	if status == 529 {
		status = http.StatusServiceUnavailable
	}
	bedrockError(w, status, exceptionOf(resp.StatusCode), e.Error.Message)
}

// frameWriter writes AWS event-stream frames, one flush per frame.
type frameWriter struct {
	w   http.ResponseWriter
	enc *eventstream.Encoder
}

func newFrameWriter(w http.ResponseWriter) *frameWriter {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	return &frameWriter{w: w, enc: eventstream.NewEncoder()}
}

func (f *frameWriter) event(eventType string, payload []byte) error {
	return f.write(eventstream.Message{Headers: eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue(eventType)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
	}, Payload: payload})
}

func (f *frameWriter) exception(name, message string) error {
	payload, _ := json.Marshal(map[string]string{"message": message})
	return f.write(eventstream.Message{Headers: eventstream.Headers{
		{Name: ":exception-type", Value: eventstream.StringValue(name)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
	}, Payload: payload})
}

func (f *frameWriter) write(m eventstream.Message) error {
	if err := f.enc.Encode(f.w, m); err != nil {
		return err
	}
	return http.NewResponseController(f.w).Flush()
}
