// Package fakeupstream runs local servers that speak the real wire protocols
// of OpenAI, Anthropic and Gemini for tests: JSON and SSE, with usage, errors,
// delays and mid-stream failures on demand, recording every request they
// receive.
//
// One Server answers all three dialects:
//
//	OpenAI     POST /v1/chat/completions, /v1/completions, /v1/embeddings,
//	           /v1/responses, /v1/images/generations, /v1/audio/speech,
//	           /v1/audio/transcriptions (multipart); GET /v1/models;
//	           GET /images/{name} (the PNG that image URLs point to)
//	Anthropic  POST /v1/messages, /v1/messages/count_tokens; GET /v1/models
//	           (with x-api-key)
//	Gemini     POST /v1beta/models/{model}:generateContent and
//	           :streamGenerateContent (?alt=sse for events, else a JSON
//	           array); GET /v1beta/models
//
// Every request is recorded (Requests), then checked the way the real API
// checks it: the key (WithKey; OpenAI "Authorization: Bearer", Anthropic
// "x-api-key" plus "anthropic-version", Gemini "x-goog-api-key" or ?key=), a
// well-formed body and the required fields. A failed check answers with that
// API's own error body and status. Note that Gemini answers a wrong key with
// 400 INVALID_ARGUMENT (reason API_KEY_INVALID) and a missing one with 403
// PERMISSION_DENIED, never 401, exactly as Google does.
//
// A request that passes takes the next scripted Behavior (Script), or the
// standing one (SetBehavior), and is answered from it. Responses echo the
// request's model; ids count up per server ("chatcmpl-fake7", "msg_fake7").
// A cut stream (FailAfter) drops the connection mid-body, so clients read an
// unexpected EOF, never a clean end (ResetOnCut: a connection reset). Extra
// response headers (Behavior.Header) stand for what real upstreams and their
// proxies add. When the test ends, hanging and delayed
// requests return so the server can close.
//
// Usage reports Behavior's numbers exactly, in each API's own terms, so the
// same Behavior costs the same quota whichever dialect serves it:
// PromptTokens is the whole prompt including CachedTokens, as OpenAI and
// Gemini count it; Anthropic reports input_tokens = PromptTokens −
// CachedTokens and cache_read_input_tokens = CachedTokens (cache writes:
// Behavior.CacheWriteTokens). Streams carry
// usage the real way: OpenAI's usage chunk (choices: []) after the finish
// chunk and before [DONE], only when the request set
// stream_options.include_usage; Anthropic's input usage in message_start and
// the final output_tokens in message_delta (message_start reports at most 1
// output token, as Anthropic does); Gemini's running totals on every event,
// exact on the last.
package fakeupstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Dialects, as recorded in Request.Dialect.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Gemini    = "gemini"
)

// Defaults of a Server and of a Behavior's zero fields.
const (
	DefaultKey              = "upstream-key"
	DefaultReply            = "Hello from fake upstream"
	DefaultPromptTokens     = 12
	DefaultCompletionTokens = 8
	DefaultChunks           = 3
)

// Behavior says how the server answers. Zero fields take the defaults, so
// Behavior{} is a plain successful answer.
type Behavior struct {
	// Status, when neither 0 nor 200, answers with the dialect's error body
	// for that status (429 rate limit, 500 server error, 529 overloaded…).
	Status int
	// ErrorMessage replaces the error body's standard message for Status.
	ErrorMessage string
	// ErrorType replaces the error's "type" (OpenAI, Anthropic); ErrorCode
	// replaces OpenAI's "code" or sets the reason of Gemini's ErrorInfo
	// detail: an upstream's way of saying why it refused.
	ErrorType, ErrorCode string
	// Reply is the assistant's text (default DefaultReply).
	Reply string
	// PromptTokens, CompletionTokens and CachedTokens are the usage to
	// report (defaults 12, 8 and 0). A negative value reports 0.
	PromptTokens, CompletionTokens, CachedTokens int64
	// CacheWriteTokens and CacheWrite1hTokens are prompt tokens written to a
	// 5-minute and a 1-hour cache. Only Anthropic reports cache writes:
	// cache_creation_input_tokens (their sum, taken out of input_tokens)
	// and its cache_creation split. The other dialects count them as plain
	// prompt tokens, as those APIs have no such report.
	CacheWriteTokens, CacheWrite1hTokens int64
	// HonourLimit caps the reported CompletionTokens at the request's
	// completion limit when it sets one, as real upstreams stop there:
	// max_completion_tokens, max_tokens or max_output_tokens (OpenAI),
	// max_tokens (Anthropic), generationConfig.maxOutputTokens (Gemini).
	// Without a limit the full CompletionTokens is reported.
	HonourLimit bool
	// OmitUsage reports no usage at all: no usage field in JSON, no usage
	// chunk, usage object or usageMetadata in streams.
	OmitUsage bool
	// Chunks is the number of content deltas a stream splits Reply (or the
	// tool call's arguments) into; default 3, fewer when Reply is shorter.
	Chunks int
	// Delay waits before answering at all (time to first byte).
	Delay time.Duration
	// Gate, when set, holds the answer (after Delay) until the channel is
	// closed: a test keeps a request in flight for exactly as long as it
	// needs, with no timing involved.
	Gate <-chan struct{}
	// ChunkDelay waits between stream events.
	ChunkDelay time.Duration
	// DeltaGate, when set, holds each content delta of a stream after the
	// first until a value is received from it: a test lets the next delta
	// go only once the client has the last one, so a relay that keeps a
	// delta in its buffer while it waits for the next never gets it.
	DeltaGate <-chan struct{}
	// UsageDelay waits, in a stream, before the event with the final usage
	// (OpenAI chat's usage chunk, Anthropic's message_delta), as a
	// reasoning model reports its hidden work only at the end.
	UsageDelay time.Duration
	// FailAfter closes the connection abruptly after this many content
	// deltas, without the stream's proper end ([DONE], message_stop, a
	// finishReason); 0 never does.
	FailAfter int
	// ResetOnCut makes FailAfter's cut a TCP reset instead of a close, so
	// the client reads a network error that names both addresses
	// ("read tcp 127.0.0.1:…->127.0.0.1:…: connection reset by peer").
	ResetOnCut bool
	// Header is added to the answer's headers, error answers included, as
	// real upstreams add their own (openai-organization, set-cookie,
	// x-ratelimit-*).
	Header http.Header
	// ToolCall answers with a function call instead of text.
	ToolCall *ToolCall
	// Hang sends the status and headers, then blocks until the client goes
	// away (or the test ends).
	Hang bool
	// Garbage answers 200 with an HTML page instead of the API's format.
	Garbage bool
	// BodySteps sends the answer's status and headers at once and its body
	// in steps the test decides: each value received sends that many more
	// bytes (flushed), and closing the channel sends the rest. Until the
	// test sends, the body stalls, as an upstream that stops in the middle
	// of its answer and keeps the connection open; the answer then ends
	// when the client goes away (or the test ends). Meant for
	// non-streaming answers (a stream's events are cut anywhere).
	BodySteps <-chan int
}

// ToolCall is a function call the model makes.
type ToolCall struct {
	Name string
	// Arguments is a JSON object as text; empty means "{}".
	Arguments string
}

// Request is a request as the server received it.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Dialect is OpenAI, Anthropic or Gemini, by the endpoint called.
	Dialect string
	// Model is the body's "model" (for Gemini, the path's; for a
	// transcription, the form's).
	Model string
	// Stream is the body's "stream" (for Gemini, :streamGenerateContent).
	Stream bool
	// Key is the credential presented, from the dialect's header.
	Key string
}

// Server is a running fake upstream. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL, without a trailing slash; channels use it as
	// their base URL.
	URL string

	srv    *httptest.Server
	keys   []string
	models []string
	stop   chan struct{} // closed when the test ends: hanging handlers return
	ids    atomic.Int64
	open   atomic.Int64
	// chatOnly answers /v1/responses 404 as an unknown route (SetChatOnly).
	chatOnly atomic.Bool

	mu       sync.Mutex
	behavior Behavior
	script   []Behavior
	rules    []rule
	requests []Request
}

// rule answers requests whose body contains match with b (When).
type rule struct {
	match string
	b     Behavior
}

// Option configures a Server.
type Option func(*Server)

// WithKey sets the keys the server accepts (default DefaultKey); any of
// them passes.
func WithKey(keys ...string) Option {
	return func(s *Server) { s.keys = keys }
}

// SetChatOnly makes the server an OpenAI-compatible upstream without the
// Responses API, as many are: POST /v1/responses answers 404 like any
// unknown route (the request is still recorded). false restores it.
func (s *Server) SetChatOnly(on bool) { s.chatOnly.Store(on) }

// WithModels sets the models the list endpoints of all three dialects
// return (default: a few real names per dialect).
func WithModels(models ...string) Option {
	return func(s *Server) { s.models = models }
}

// New starts a server that stops when t ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{keys: []string{DefaultKey}, stop: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.stop) // httptest.Server.Close waits for hanging handlers
		s.srv.Close()
	})
	return s
}

// SetBehavior sets the behavior of all following requests that no script
// entry is left for.
func (s *Server) SetBehavior(b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behavior = b
}

// Script queues behaviors for the next requests, one each, in order; after
// them the SetBehavior one applies again. Requests refused by the key or
// body checks take no entry.
func (s *Server) Script(bs ...Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, bs...)
}

// When answers every following request whose body contains match with b,
// before the script and the standing behavior: a prompt the upstream
// fails on, sent by one caller among others.
func (s *Server) When(match string, b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{match, b})
}

// next takes the behavior for one request with body raw, with defaults
// filled in.
func (s *Server) next(raw []byte) Behavior {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if strings.Contains(string(raw), r.match) {
			return r.b.withDefaults()
		}
	}
	b := s.behavior
	if len(s.script) > 0 {
		b, s.script = s.script[0], s.script[1:]
	}
	return b.withDefaults()
}

func (b Behavior) withDefaults() Behavior {
	if b.Reply == "" {
		b.Reply = DefaultReply
	}
	b.PromptTokens = orDefault(b.PromptTokens, DefaultPromptTokens)
	b.CompletionTokens = orDefault(b.CompletionTokens, DefaultCompletionTokens)
	b.CachedTokens = max(b.CachedTokens, 0)
	b.CacheWriteTokens, b.CacheWrite1hTokens = max(b.CacheWriteTokens, 0), max(b.CacheWrite1hTokens, 0)
	if b.Chunks <= 0 {
		b.Chunks = DefaultChunks
	}
	return b
}

func orDefault(n, def int64) int64 {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// record keeps a copy of a received request.
func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// Requests returns copies of the requests received so far, in arrival
// order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// LastRequest returns a copy of the latest request; the zero Request when
// none arrived.
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}
	}
	return s.requests[len(s.requests)-1].clone()
}

func (r Request) clone() Request {
	r.Header = r.Header.Clone()
	r.Body = append([]byte(nil), r.Body...)
	return r
}

// Count returns how many requests arrived, refused ones included.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Open returns how many requests are being served right now. After a client
// goes away it drops as soon as the server notices.
func (s *Server) Open() int { return int(s.open.Load()) }

// WaitOpen waits until Open() is n and fails t if it is not within timeout.
func (s *Server) WaitOpen(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Open()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fakeupstream: %d requests open after %v, want %d", got, timeout, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
