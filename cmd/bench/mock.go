package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Wire details of the mock upstream that clients of the bench (and the relay
// author) rely on.
const (
	// holdMaxTokens in a request's max_tokens (or max_completion_tokens)
	// asks the mock to hold a stream open: it sends the headers and one
	// chunk, flushes, then waits until the client goes away or
	// POST /bench/release. A body field is used rather than a header
	// because a gateway forwards the body but not arbitrary headers.
	holdMaxTokens = 999999
	// upstreamKey is the channel key the bench gives the gateway. The mock
	// accepts it or no Authorization at all; any other key (a client's sk-
	// key leaking upstream) is answered 401.
	upstreamKey = "bench-upstream-key"
	// holdLimit ends a held stream by itself, so the mock never waits forever.
	holdLimit = 2 * time.Minute
	// Usage the mock reports for every call.
	mockPromptTokens     = 9
	mockCompletionTokens = 7
)

// mockServer is a zero-latency upstream speaking OpenAI chat completions.
type mockServer struct {
	held atomic.Int64 // streams being held open now

	mu      sync.Mutex
	release chan struct{} // closed by POST /bench/release
}

func newMockServer() *mockServer { return &mockServer{release: make(chan struct{})} }

// handler lists the mock's routes.
func (m *mockServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.chat)
	mux.HandleFunc("GET /bench/held", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, m.held.Load())
	})
	mux.HandleFunc("POST /bench/release", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		close(m.release)
		m.release = make(chan struct{})
		m.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// mockRequest is what the mock reads of a chat request.
type mockRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
}

func (q *mockRequest) hold() bool {
	return (q.MaxTokens != nil && *q.MaxTokens == holdMaxTokens) ||
		(q.MaxCompletionTokens != nil && *q.MaxCompletionTokens == holdMaxTokens)
}

func (m *mockServer) chat(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+upstreamKey {
		mockError(w, http.StatusUnauthorized, "invalid_api_key", "bench mock: unexpected upstream key")
		return
	}
	var q mockRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&q); err != nil {
		mockError(w, http.StatusBadRequest, "invalid_json", "bench mock: "+err.Error())
		return
	}
	if q.Model == "" {
		mockError(w, http.StatusBadRequest, "missing_model", "bench mock: model is required")
		return
	}
	model, _ := json.Marshal(q.Model)
	created := strconv.FormatInt(time.Now().Unix(), 10)
	if !q.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-bench","object":"chat.completion","created":%s,"model":%s,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench mock."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			created, model, mockPromptTokens, mockCompletionTokens, mockPromptTokens+mockCompletionTokens)
		return
	}
	m.stream(w, r, &q, created, string(model))
}

// stream writes the SSE form: a role chunk, two content chunks, a finish
// chunk, a usage chunk when asked, then [DONE]; flushed event by event as a
// real upstream would.
func (m *mockServer) stream(w http.ResponseWriter, r *http.Request, q *mockRequest, created, model string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if q.hold() {
		// Counted before the first chunk goes out, so a client that has it
		// sees the stream counted.
		m.held.Add(1)
		defer m.held.Add(-1)
	}
	rc := http.NewResponseController(w)
	head := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":` + created + `,"model":` + model + `,"choices":`
	event := func(rest string) bool {
		if _, err := fmt.Fprintf(w, "data: %s%s}\n\n", head, rest); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !event(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`) {
		return
	}
	if q.hold() && !m.holdOpen(r) {
		return // the client went away: nothing more to send
	}
	for _, part := range []string{"Hello", " from the bench mock."} {
		if !event(`[{"index":0,"delta":{"content":"` + part + `"},"finish_reason":null}]`) {
			return
		}
	}
	if !event(`[{"index":0,"delta":{},"finish_reason":"stop"}]`) {
		return
	}
	if q.StreamOptions != nil && q.StreamOptions.IncludeUsage {
		usage := fmt.Sprintf(`[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`,
			mockPromptTokens, mockCompletionTokens, mockPromptTokens+mockCompletionTokens)
		if !event(usage) {
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	rc.Flush()
}

// holdOpen waits until the client disconnects (false), or a release or the
// hold limit (true: finish the stream).
func (m *mockServer) holdOpen(r *http.Request) bool {
	m.mu.Lock()
	release := m.release
	m.mu.Unlock()
	t := time.NewTimer(holdLimit)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-release:
	case <-t.C:
	}
	return true
}

// mockError writes an OpenAI-shaped error body.
func mockError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{
		"message": msg, "type": "invalid_request_error", "code": code,
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
