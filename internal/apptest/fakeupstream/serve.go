package fakeupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// routes lists every endpoint, by dialect.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// OpenAI.
	mux.Handle("POST /v1/chat/completions", s.endpoint(OpenAI, chat))
	mux.Handle("POST /v1/completions", s.endpoint(OpenAI, completion))
	mux.Handle("POST /v1/embeddings", s.endpoint(OpenAI, embeddings))
	mux.Handle("POST /v1/responses", s.endpoint(OpenAI, responses))
	mux.Handle("POST /v1/images/generations", s.endpoint(OpenAI, images))
	mux.Handle("POST /v1/audio/speech", s.endpoint(OpenAI, speech))
	mux.Handle("POST /v1/audio/transcriptions", s.endpoint(OpenAI, transcription))
	mux.Handle("GET /v1/models", s.modelsEndpoint())
	mux.HandleFunc("GET /images/{name}", imageFile)
	// Anthropic.
	mux.Handle("POST /v1/messages", s.endpoint(Anthropic, messages))
	mux.Handle("POST /v1/messages/count_tokens", s.endpoint(Anthropic, countTokens))
	// Gemini.
	mux.Handle("POST /v1beta/models/{call}", s.endpoint(Gemini, generate))
	mux.Handle("GET /v1beta/models", s.endpoint(Gemini, geminiModels))
	mux.Handle("/", s.endpoint("", nil))
	return mux
}

// modelsEndpoint serves GET /v1/models, which OpenAI and Anthropic share:
// an Anthropic-authenticated call gets Anthropic's list.
func (s *Server) modelsEndpoint() http.Handler {
	openAI, anthropic := s.endpoint(OpenAI, openAIModels), s.endpoint(Anthropic, anthropicModels)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "" {
			anthropic.ServeHTTP(w, r)
			return
		}
		openAI.ServeHTTP(w, r)
	})
}

// handler answers one checked request from x.b.
type handler func(x *exchange) error

// exchange is one request being answered.
type exchange struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	dialect string
	seq     int64
	model   string
	stream  bool
	raw     []byte
	body    fields
	form    *multipart.Form // multipart requests only
	b       Behavior
}

// fields are the request body fields the server reads, of any endpoint.
type fields struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens json.RawMessage `json:"max_tokens"`
	// Completion limits other than max_tokens (Behavior.HonourLimit).
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	MaxOutputTokens     *int64 `json:"max_output_tokens"`
	GenerationConfig    *struct {
		MaxOutputTokens *int64 `json:"maxOutputTokens"`
	} `json:"generationConfig"`
	Contents       json.RawMessage `json:"contents"`
	Input          json.RawMessage `json:"input"`
	N              int             `json:"n"`
	ResponseFormat json.RawMessage `json:"response_format"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

var (
	// errCut ends a stream by dropping the connection (Behavior.FailAfter).
	errCut = errors.New("fakeupstream: cut the stream")
	// errGone means the client went away or the test ended.
	errGone = errors.New("fakeupstream: client gone")
)

const maxBody = 64 << 20

// endpoint wraps h with what every request goes through: counting, reading
// and recording, the API's own checks, then the Behavior's delay, error,
// garbage and hang. An empty dialect with nil h is the 404 of an unknown
// path.
func (s *Server) endpoint(dialect string, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.open.Add(1)
		defer s.open.Add(-1)
		x := &exchange{s: s, w: w, r: r, dialect: dialect, seq: s.ids.Add(1)}
		if dialect == "" {
			x.dialect = OpenAI
			if strings.HasPrefix(r.URL.Path, "/v1beta/") {
				x.dialect = Gemini
			}
		}
		raw, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		x.raw = raw
		parseErr := x.parse()
		defer x.cleanup()
		s.record(x.request())

		var f *failure
		switch {
		case h == nil, dialect == OpenAI && r.URL.Path == "/v1/responses" && s.chatOnly.Load():
			f = notFound(x.dialect, r)
		case readErr != nil:
			f = &failure{status: http.StatusBadRequest, message: "read request body: " + readErr.Error()}
		default:
			f = s.authorize(x.dialect, r)
		}
		if f == nil && parseErr != nil {
			f = badBody(x.dialect, parseErr)
		}
		if f == nil {
			f = validate(x)
		}
		if f != nil {
			writeFailure(w, x.dialect, *f)
			return
		}
		x.b = s.next(x.raw)
		if lim := x.completionLimit(); x.b.HonourLimit && lim > 0 && x.b.CompletionTokens > lim {
			x.b.CompletionTokens = lim
		}
		for k, v := range x.b.Header {
			w.Header()[http.CanonicalHeaderKey(k)] = v
		}
		if err := x.answer(h); err == errCut {
			if x.b.ResetOnCut {
				resetConnection(w)
			}
			// The stdlib's way to drop a response mid-body: the connection
			// closes without the last chunk, so the client sees a truncated
			// stream, not an end.
			panic(http.ErrAbortHandler)
		}
	})
}

// answer applies the Behavior, then calls h for a normal answer.
func (x *exchange) answer(h handler) error {
	b := x.b
	if err := x.sleep(b.Delay); err != nil {
		return err
	}
	if b.Gate != nil {
		select {
		case <-b.Gate:
		case <-x.r.Context().Done():
			return errGone
		case <-x.s.stop:
			return errGone
		}
	}
	switch {
	case b.Status != 0 && b.Status != http.StatusOK:
		f := statusFailure(x, b.Status)
		if b.ErrorMessage != "" {
			f.message = b.ErrorMessage
		}
		if b.ErrorType != "" {
			f.kind = b.ErrorType
		}
		if b.ErrorCode != "" {
			f.code = b.ErrorCode
		}
		writeFailure(x.w, x.dialect, f)
		return nil
	case b.Garbage:
		x.w.Header().Set("Content-Type", "text/html; charset=utf-8")
		x.w.WriteHeader(http.StatusOK)
		_, err := io.WriteString(x.w, "<html><body>oops: bad gateway page</body></html>\n")
		return err
	case b.Hang:
		x.w.Header().Set("Content-Type", x.contentType())
		x.w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(x.w).Flush()
		select {
		case <-x.r.Context().Done():
		case <-x.s.stop:
		}
		return errGone
	}
	if b.BodySteps != nil {
		return x.inSteps(h)
	}
	return h(x)
}

// inSteps answers with h, its body held back and sent in the steps the
// test sends on Behavior.BodySteps.
func (x *exchange) inSteps(h handler) error {
	w := x.w
	held := &heldBody{ResponseWriter: w}
	x.w = held
	err := h(x)
	x.w = w
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the status and headers
	rest := held.buf.Bytes()
	for len(rest) > 0 {
		select {
		case n, ok := <-x.b.BodySteps:
			if !ok {
				n = len(rest)
			}
			n = max(0, min(n, len(rest)))
			if _, err := w.Write(rest[:n]); err != nil {
				return errGone
			}
			_ = rc.Flush()
			rest = rest[n:]
		case <-x.r.Context().Done():
			return errGone
		case <-x.s.stop:
			return errGone
		}
	}
	return nil
}

// heldBody passes the status and headers on and keeps the body
// (Behavior.BodySteps); flushes wait for the steps.
type heldBody struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *heldBody) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *heldBody) Flush()                      {}

// parse reads the model and stream flag, from the body (JSON or multipart)
// and, for Gemini, the path.
func (x *exchange) parse() error {
	var err error
	mediaType, params, _ := mime.ParseMediaType(x.r.Header.Get("Content-Type"))
	switch {
	case mediaType == "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(x.raw), params["boundary"])
		if x.form, err = mr.ReadForm(maxBody); err != nil {
			return err
		}
		if v := x.form.Value["model"]; len(v) > 0 {
			x.model = v[0]
		}
	case len(bytes.TrimSpace(x.raw)) > 0:
		if err = json.Unmarshal(x.raw, &x.body); err != nil {
			return err
		}
		x.model, x.stream = x.body.Model, x.body.Stream
	}
	if call := x.r.PathValue("call"); call != "" && x.dialect == Gemini {
		model, method, _ := strings.Cut(call, ":")
		x.model, x.stream = model, method == "streamGenerateContent"
	}
	return nil
}

func (x *exchange) cleanup() {
	if x.form != nil {
		_ = x.form.RemoveAll()
	}
}

func (x *exchange) request() Request {
	return Request{
		Method:   x.r.Method,
		Path:     x.r.URL.Path,
		RawQuery: x.r.URL.RawQuery,
		Header:   x.r.Header.Clone(),
		Body:     x.raw,
		Dialect:  x.dialect,
		Model:    x.model,
		Stream:   x.stream,
		Key:      presentedKey(x.dialect, x.r),
	}
}

// includeUsage reports whether an OpenAI stream ends with a usage chunk.
func (x *exchange) includeUsage() bool {
	return x.body.StreamOptions != nil && x.body.StreamOptions.IncludeUsage && !x.b.OmitUsage
}

// id returns an id of this exchange with the given prefix.
func (x *exchange) id(prefix string) string { return fmt.Sprintf("%s%d", prefix, x.seq) }

// contentType is what a normal answer would be sent as.
func (x *exchange) contentType() string {
	switch {
	case !x.stream:
		return "application/json"
	case x.dialect == Gemini && x.r.URL.Query().Get("alt") != "sse":
		return "application/json; charset=UTF-8"
	case x.dialect == Gemini:
		return "text/event-stream"
	}
	return "text/event-stream; charset=utf-8"
}

// sleep waits d, or returns errGone when the client goes away first.
func (x *exchange) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-x.r.Context().Done():
	case <-x.s.stop:
	}
	return errGone
}

// json writes v as a 200 JSON answer.
func (x *exchange) json(v any) error {
	return writeJSON(x.w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		// Only a Behavior with bad ToolCall.Arguments gets here.
		status, data = http.StatusInternalServerError, []byte(`{"error":{"message":"fakeupstream: `+
			strings.ReplaceAll(err.Error(), `"`, `'`)+`","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(data, '\n'))
	return err
}

// obj is a JSON object literal.
type obj = map[string]any

// arguments returns the call's arguments, "{}" when empty.
func (c *ToolCall) arguments() string {
	if c.Arguments == "" {
		return "{}"
	}
	return c.Arguments
}

// completionLimit is the request's completion limit, 0 when it sets none:
// the smallest of the fields it sent, as an upstream stops at the first.
func (x *exchange) completionLimit() int64 {
	var limits []int64
	var n int64
	if json.Unmarshal(x.body.MaxTokens, &n) == nil && n > 0 {
		limits = append(limits, n)
	}
	for _, p := range []*int64{x.body.MaxCompletionTokens, x.body.MaxOutputTokens} {
		if p != nil && *p > 0 {
			limits = append(limits, *p)
		}
	}
	if g := x.body.GenerationConfig; g != nil && g.MaxOutputTokens != nil && *g.MaxOutputTokens > 0 {
		limits = append(limits, *g.MaxOutputTokens)
	}
	if len(limits) == 0 {
		return 0
	}
	return slices.Min(limits)
}

// resetConnection drops the connection under w with a TCP reset (linger 0)
// rather than a close, as a crashed upstream or a middlebox does.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
	panic(http.ErrAbortHandler)
}
