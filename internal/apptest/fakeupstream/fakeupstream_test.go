package fakeupstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// streamCalls are a streaming request of each dialect, with what a content
// delta and a proper end look like in it.
var streamCalls = []struct {
	name     string
	call     call
	isDelta  func(data string) bool
	endsWell func(data string) bool
}{
	{"openai chat", call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatStreamBody(true)},
		func(d string) bool {
			return strings.Contains(d, `"delta":{"content":"`) && !strings.Contains(d, `"role"`)
		},
		func(d string) bool { return d == "[DONE]" }},
	{"openai completions", call{path: "/v1/completions", dialect: fakeupstream.OpenAI, body: `{"model":"m","prompt":"p","stream":true}`},
		func(d string) bool { return strings.Contains(d, `"finish_reason":null`) },
		func(d string) bool { return d == "[DONE]" }},
	{"openai responses", call{path: "/v1/responses", dialect: fakeupstream.OpenAI, body: `{"model":"m","input":"p","stream":true}`},
		func(d string) bool { return strings.Contains(d, `"type":"response.output_text.delta"`) },
		func(d string) bool { return strings.Contains(d, `"type":"response.completed"`) }},
	{"anthropic", call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()},
		func(d string) bool { return strings.Contains(d, `"type":"content_block_delta"`) },
		func(d string) bool { return strings.Contains(d, `"type":"message_stop"`) }},
	{"gemini", call{path: "/v1beta/models/g:streamGenerateContent?alt=sse", dialect: fakeupstream.Gemini, body: generateBody},
		func(d string) bool { return !strings.Contains(d, `"finishReason"`) },
		func(d string) bool { return strings.Contains(d, `"finishReason":"STOP"`) }},
}

// TestFailAfterTruncates: a cut stream must look cut to the client (an
// unexpected EOF, no proper end), so the relay cannot mistake it for a
// finished one.
func TestFailAfterTruncates(t *testing.T) {
	for _, sc := range streamCalls {
		t.Run(sc.name, func(t *testing.T) {
			s := fakeupstream.New(t)
			s.SetBehavior(fakeupstream.Behavior{Chunks: 4})
			evs := cleanEvents(t, send(t, s, sc.call))
			if deltas := count(evs, sc.isDelta); deltas != 4 || !sc.endsWell(string(evs[len(evs)-1].Data)) {
				t.Fatalf("normal stream: %d deltas, last %s", deltas, evs[len(evs)-1].Data)
			}

			s.SetBehavior(fakeupstream.Behavior{Chunks: 4, FailAfter: 2})
			evs, err := events(t, send(t, s, sc.call))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read error %v, want unexpected EOF", err)
			}
			if deltas := count(evs, sc.isDelta); deltas != 2 || count(evs, sc.endsWell) != 0 {
				t.Errorf("cut stream: %d deltas, %d ends; want 2 and none", deltas, count(evs, sc.endsWell))
			}
			s.WaitOpen(t, 0, 5*time.Second)
		})
	}
}

// TestResetOnCutAndHeaders: ResetOnCut cuts with a connection reset, and
// Behavior.Header reaches the client on success and error answers.
func TestResetOnCutAndHeaders(t *testing.T) {
	sc := streamCalls[0]
	s := fakeupstream.New(t)
	extra := http.Header{"Openai-Organization": {"org-x"}, "Set-Cookie": {"a=b"}}
	s.SetBehavior(fakeupstream.Behavior{Chunks: 4, FailAfter: 2, ResetOnCut: true, Header: extra})
	resp := send(t, s, sc.call)
	if resp.Header.Get("Openai-Organization") != "org-x" || resp.Header.Get("Set-Cookie") != "a=b" {
		t.Errorf("headers %v, want the Behavior's", resp.Header)
	}
	if _, err := events(t, resp); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("read error %v, want a connection reset", err)
	}
	s.SetBehavior(fakeupstream.Behavior{Status: http.StatusTooManyRequests, Header: extra})
	if resp := send(t, s, sc.call); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Openai-Organization") != "org-x" {
		t.Errorf("error answer %d, headers %v", resp.StatusCode, resp.Header)
	}
}

func count(evs []sse.Event, match func(string) bool) int {
	n := 0
	for _, ev := range evs {
		if match(string(ev.Data)) {
			n++
		}
	}
	return n
}

// TestHangUntilClientLeaves: hanging requests have their headers, stay open
// while the client waits, and close when it goes away.
func TestHangUntilClientLeaves(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 40
	for i := range n {
		c := streamCalls[i%len(streamCalls)].call
		c.ctx = ctx
		resp := send(t, s, c) // returns once the headers arrived
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: status %d, Content-Type %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	s.WaitOpen(t, n, 5*time.Second)
	time.Sleep(20 * time.Millisecond)
	if got := s.Open(); got != n {
		t.Fatalf("Open() = %d while clients wait, want %d", got, n)
	}
	cancel()
	s.WaitOpen(t, 0, 5*time.Second)
	if s.Count() != n {
		t.Errorf("Count() = %d, want %d", s.Count(), n)
	}
}

// TestWrongOrMissingKey checks each API's own refusal, status included:
// Gemini does not answer 401.
func TestWrongOrMissingKey(t *testing.T) {
	s := fakeupstream.New(t, fakeupstream.WithKey("key-a", "key-b"))
	s.Script(fakeupstream.Behavior{Reply: "kept for the first accepted request"})
	for _, key := range []string{"wrong-key-123456", "-"} {
		missing := key == "-"
		auth := func(dialect string) string {
			if missing {
				return ""
			}
			return dialect
		}
		var oa openai.ErrorBody
		decode(t, send(t, s, call{path: "/v1/chat/completions", dialect: auth(fakeupstream.OpenAI), key: key, body: chatBody}), 401, &oa)
		wantCode := any("invalid_api_key")
		if missing {
			wantCode = nil
		}
		if oa.Error.Type != "invalid_request_error" || oa.Error.Code != wantCode || (!missing && strings.Contains(oa.Error.Message, key)) ||
			!strings.Contains(oa.Error.Message, map[bool]string{false: "Incorrect API key provided", true: "You didn't provide an API key"}[missing]) {
			t.Errorf("OpenAI, key %q: %+v", key, oa.Error)
		}

		var an anthropicError
		decode(t, send(t, s, call{path: "/v1/messages", dialect: auth(fakeupstream.Anthropic), key: key, body: messagesBody}), 401, &an)
		if want := map[bool]string{false: "invalid x-api-key", true: "x-api-key header is required"}[missing]; an.Type != "error" ||
			an.Error.Type != "authentication_error" || an.Error.Message != want {
			t.Errorf("Anthropic, key %q: %+v", key, an)
		}

		var ge gemini.ErrorBody
		status := map[bool]int{false: 400, true: 403}[missing]
		decode(t, send(t, s, call{path: "/v1beta/models/g:generateContent", dialect: auth(fakeupstream.Gemini), key: key, body: generateBody}), status, &ge)
		if want := map[bool]string{false: "INVALID_ARGUMENT", true: "PERMISSION_DENIED"}[missing]; ge.Error.Code != status || ge.Error.Status != want {
			t.Errorf("Gemini, key %q: %+v", key, ge)
		}
	}

	// Either configured key passes, and refused requests left the script alone.
	var got openai.ChatResponse
	decode(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, key: "key-b", body: chatBody}), 200, &got)
	if string(got.Choices[0].Message.Content) != `"kept for the first accepted request"` || s.LastRequest().Key != "key-b" {
		t.Errorf("after refusals: %s, key %q", got.Choices[0].Message.Content, s.LastRequest().Key)
	}
}

func TestStatusErrorBodies(t *testing.T) {
	s := fakeupstream.New(t)
	check := func(status int, c call, want string) {
		t.Helper()
		s.SetBehavior(fakeupstream.Behavior{Status: status})
		resp := send(t, s, c)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status || !strings.Contains(string(body), want) {
			t.Errorf("%d on %s: %d %s, want %s", status, c.path, resp.StatusCode, body, want)
		}
	}
	chat := call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatBody}
	msgs := call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()}
	gem := call{path: "/v1beta/models/g:streamGenerateContent?alt=sse", dialect: fakeupstream.Gemini, body: generateBody}
	check(429, chat, `"code":"rate_limit_exceeded"`)
	check(500, chat, `"type":"server_error"`)
	check(401, chat, `"code":"invalid_api_key"`)
	check(429, msgs, `"type":"rate_limit_error"`)
	check(529, msgs, `{"message":"Overloaded","type":"overloaded_error"}`)
	check(429, gem, `"status":"RESOURCE_EXHAUSTED"`)
	check(503, gem, `"status":"UNAVAILABLE"`)

	s.SetBehavior(fakeupstream.Behavior{Status: 400, ErrorMessage: "context too long"})
	var oa openai.ErrorBody
	decode(t, send(t, s, chat), 400, &oa)
	if oa.Error.Message != "context too long" || oa.Error.Type != "invalid_request_error" {
		t.Errorf("ErrorMessage: %+v", oa.Error)
	}
}

func TestScriptThenStandingBehavior(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "standing"})
	s.Script(fakeupstream.Behavior{Status: 429}, fakeupstream.Behavior{Reply: "second"})
	s.Script(fakeupstream.Behavior{Status: 500})
	var got []string
	for range 5 {
		resp := send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatBody})
		if resp.StatusCode != 200 {
			got = append(got, fmt.Sprint(resp.StatusCode))
			continue
		}
		var r openai.ChatResponse
		decode(t, resp, 200, &r)
		got = append(got, strings.Trim(string(r.Choices[0].Message.Content), `"`))
	}
	if want := "429 second 500 standing standing"; strings.Join(got, " ") != want {
		t.Errorf("answers %v, want %s", got, want)
	}
}

func TestGarbageAndDelay(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Garbage: true})
	resp := send(t, s, call{path: "/v1/messages", dialect: fakeupstream.Anthropic, body: messagesStreamBody()})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "<html>") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("garbage: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	s.SetBehavior(fakeupstream.Behavior{Delay: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+fakeupstream.DefaultKey)
	start := time.Now()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered within the delay: %d", resp.StatusCode)
	}
	s.WaitOpen(t, 0, 2*time.Second) // the delay ends when the client leaves
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("delayed request held %v after the client left", d)
	}

	s.SetBehavior(fakeupstream.Behavior{ChunkDelay: 25 * time.Millisecond})
	start = time.Now()
	evs := cleanEvents(t, send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI, body: chatStreamBody(false)}))
	if d, least := time.Since(start), time.Duration(len(evs)-1)*25*time.Millisecond; d < least {
		t.Errorf("%d events in %v, want at least %v", len(evs), d, least)
	}
}

func TestUnknownPaths(t *testing.T) {
	s := fakeupstream.New(t)
	var oa openai.ErrorBody
	decode(t, send(t, s, call{path: "/v1/chat/complete", dialect: fakeupstream.OpenAI, body: chatBody}), 404, &oa)
	if oa.Error.Message != "Invalid URL (POST /v1/chat/complete)" {
		t.Errorf("OpenAI 404: %+v", oa.Error)
	}
	var ge gemini.ErrorBody
	decode(t, send(t, s, call{path: "/v1beta/models/g:countTokens", dialect: fakeupstream.Gemini, body: generateBody}), 404, &ge)
	if ge.Error.Status != "NOT_FOUND" {
		t.Errorf("Gemini 404: %+v", ge.Error)
	}
	if s.Count() != 2 || s.Requests()[1].Dialect != fakeupstream.Gemini {
		t.Errorf("unknown paths not recorded: %+v", s.Requests())
	}
}

// TestConcurrentRecording runs requests, behavior changes and reads of the
// record at once, for -race.
func TestConcurrentRecording(t *testing.T) {
	s := fakeupstream.New(t)
	const n = 60
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, r := range s.Requests() {
				r.Header.Set("X-Mutated", "by reader") // copies: must not touch the record
				_ = len(r.Body)
			}
			_ = s.LastRequest()
			_ = s.Count()
			s.SetBehavior(fakeupstream.Behavior{Reply: "x"})
			s.Script(fakeupstream.Behavior{})
		}
	}()
	for i := range n {
		wg.Go(func() {
			sc := streamCalls[i%len(streamCalls)].call
			sc.header = http.Header{"X-Call": {fmt.Sprint(i)}}
			resp, err := do(s, sc)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != 200 {
				t.Errorf("stream %d: %d, %v", i, resp.StatusCode, err)
			}
		})
	}
	wg.Wait()
	close(done)
	reqs := s.Requests()
	seen := map[string]bool{}
	for _, r := range reqs {
		seen[r.Header.Get("X-Call")] = true
		if r.Header.Get("X-Mutated") != "" {
			t.Fatal("Requests() handed out the recorded header, not a copy")
		}
	}
	if len(reqs) != n || len(seen) != n || s.Count() != n {
		t.Errorf("%d requests, %d distinct, Count %d; want %d", len(reqs), len(seen), s.Count(), n)
	}
	s.WaitOpen(t, 0, 5*time.Second)
}

// TestBodySteps: the status and headers come at once, the body in the
// steps the test sends, the rest when it closes the channel; until then
// the body stalls.
func TestBodySteps(t *testing.T) {
	s := fakeupstream.New(t)
	steps := make(chan int)
	s.SetBehavior(fakeupstream.Behavior{BodySteps: steps, Reply: "in steps"})
	resp := send(t, s, call{path: "/v1/chat/completions", dialect: fakeupstream.OpenAI,
		body: `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	steps <- 3
	head := make([]byte, 3)
	if _, err := io.ReadFull(resp.Body, head); err != nil || string(head) != `{"c` {
		t.Fatalf("first step: %q, %v", head, err)
	}
	close(steps)
	rest, err := io.ReadAll(resp.Body)
	var answer struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err != nil || json.Unmarshal(append(head, rest...), &answer) != nil || answer.Choices[0].Message.Content != "in steps" {
		t.Fatalf("whole body %s%s, %v", head, rest, err)
	}
}
