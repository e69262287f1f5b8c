package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/relay/tokencount"
)

// scriptedStream is an upstream whose stream the test writes step by
// step: it answers every request with 200 and its headers, then writes
// what the test sends on steps, flushing each, until the request ends.
type scriptedStream struct {
	URL   string
	steps chan string
}

func newScriptedStream(t *testing.T) *scriptedStream {
	t.Helper()
	s := &scriptedStream{steps: make(chan string)}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		rc.Flush()
		for {
			select {
			case step := <-s.steps:
				io.WriteString(w, step)
				rc.Flush()
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: the handler returns, so Close does not wait
	s.URL = srv.URL
	return s
}

// send writes one step of the stream.
func (s *scriptedStream) send(t *testing.T, step string) {
	t.Helper()
	select {
	case s.steps <- step:
	case <-time.After(time.Minute):
		t.Fatal("the upstream's stream is no longer read")
	}
}

// idleDialect writes an upstream stream in one channel dialect.
type idleDialect struct {
	typ int
	// start begins the stream; it holds startEvents events.
	start       string
	startEvents int
	delta       func(i int, word string) string
	// keepAlive is what an idle upstream sends: SSE comments, and the
	// dialect's ping event where it has one.
	keepAlive string
}

var (
	idleOpenAI = idleDialect{typ: 1,
		delta: func(_ int, w string) string {
			return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"` + w + ` "}}]}` + "\n\n"
		},
		keepAlive: ": keep-alive\n\n:\n\n"}
	idleOpenAIResponses = idleDialect{typ: 1,
		delta: func(i int, w string) string {
			return "event: response.output_text.delta\n" + fmt.Sprintf(`data: {"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"content_index":0,"delta":"%s ","sequence_number":%d}`, w, i) + "\n\n"
		},
		keepAlive: ": keep-alive\n\n"}
	idleAnthropic = idleDialect{typ: 14,
		start: "event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_up","type":"message","role":"assistant","model":"gpt-test","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n",
		startEvents: 2,
		delta: func(_ int, w string) string {
			return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + w + ` "}}` + "\n\n"
		},
		keepAlive: "event: ping\ndata: {\"type\": \"ping\"}\n\n: comment\n\n"}
	idleGemini = idleDialect{typ: 24,
		delta: func(_ int, w string) string {
			return `data: {"candidates":[{"content":{"parts":[{"text":"` + w + ` "}],"role":"model"},"index":0}]}` + "\n\n"
		},
		keepAlive: ": keep-alive\n\n"}
)

// idlePaths are the stream loops (streamOpenAI, streamAnthropic,
// convertStream) under each ingress's error shape.
var idlePaths = []struct {
	name string
	d    idleDialect
	path string
	// failed is the name of the client's error event ("" for the chat
	// error chunk).
	failed string
}{
	{"openai passthrough", idleOpenAI, "/v1/chat/completions", ""},
	{"responses passthrough", idleOpenAIResponses, "/v1/responses", "error"},
	{"anthropic passthrough", idleAnthropic, "/v1/messages", "error"},
	{"anthropic to chat", idleAnthropic, "/v1/chat/completions", ""},
	{"anthropic to responses", idleAnthropic, "/v1/responses", "response.failed"},
	{"openai to messages", idleOpenAI, "/v1/messages", "error"},
	{"gemini to chat", idleGemini, "/v1/chat/completions", ""},
}

// idleClient is a stream call as its client reads it.
type idleClient struct {
	resp   *http.Response
	rd     *bufio.Reader
	events []sseEvent
}

type sseEvent struct {
	name string
	data string
}

func startIdleStream(t *testing.T, e *apptest.Env, key, path string) *idleClient {
	t.Helper()
	body := map[string]any{"model": "gpt-test", "stream": true, "max_tokens": 1000, "messages": streamHi}
	if path == "/v1/responses" {
		body = map[string]any{"model": "gpt-test", "stream": true, "max_output_tokens": 1000, "input": "hi"}
	}
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", e.Server.URL+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return &idleClient{resp: resp, rd: bufio.NewReader(resp.Body)}
}

// next reads the next event; ok is false at the end of the stream.
func (c *idleClient) next(t *testing.T) (ev sseEvent, ok bool) {
	t.Helper()
	for {
		line, err := c.rd.ReadString('\n')
		if err != nil {
			return sseEvent{}, false
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && ev.data != "":
			c.events = append(c.events, ev)
			return ev, true
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// waitFor reads until an event carries text.
func (c *idleClient) waitFor(t *testing.T, text string) {
	t.Helper()
	for {
		ev, ok := c.next(t)
		if !ok {
			t.Fatalf("stream ended before %q; events %+v", text, c.events)
		}
		if strings.Contains(ev.data, text) {
			return
		}
	}
}

// rest reads the stream to its end.
func (c *idleClient) rest(t *testing.T) []sseEvent {
	t.Helper()
	for {
		if _, ok := c.next(t); !ok {
			return c.events
		}
	}
}

// checkIdleError checks the stream ended with the ingress's error event
// saying the upstream went quiet for secs, and without [DONE].
func checkIdleError(t *testing.T, events []sseEvent, failed string, secs int) {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no event at all")
	}
	last := events[len(events)-1]
	want := fmt.Sprintf("upstream sent nothing for %d s (request id ", secs)
	var body struct {
		Type     string `json:"type"`
		Message  string `json:"message"`
		Sequence *int   `json:"sequence_number"`
		Error    struct {
			Message string `json:"message"`
		} `json:"error"`
		Response struct {
			Status string `json:"status"`
			Error  struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"response"`
	}
	if last.name != failed || json.Unmarshal([]byte(last.data), &body) != nil {
		t.Fatalf("last event %+v, want a %q event", last, failed)
	}
	var msg string
	switch {
	case failed == "response.failed":
		msg = body.Response.Error.Message
		if body.Response.Status != "failed" {
			t.Fatalf("response.failed %s", last.data)
		}
	case failed == "error" && body.Type == "error" && body.Sequence != nil:
		msg = body.Message // the Responses API's error event
		if *body.Sequence != len(events)-1 {
			t.Fatalf("error event %s after %d events: sequence_number must count on", last.data, len(events)-1)
		}
	default:
		msg = body.Error.Message // the chat error chunk, Anthropic's error event
	}
	if !strings.HasPrefix(msg, want) {
		t.Fatalf("error event %s, want its message to begin %q", last.data, want)
	}
	for _, ev := range events {
		if ev.data == "[DONE]" {
			t.Fatalf("a stream ended by the idle timeout closed with [DONE]: %+v", events)
		}
	}
}

// checkIdleBilling checks the call was billed once, for the text the
// upstream produced (counted locally, no usage came), and left one
// stream_idle_timeout error row.
func checkIdleBilling(t *testing.T, e *apptest.Env, g *apptest.Gateway, before apptest.Accounts, produced string, secs int) {
	t.Helper()
	logs := g.ConsumeLogs()
	if len(logs) != 1 {
		t.Fatalf("%d consume logs, want 1: %+v", len(logs), logs)
	}
	var counter tokencount.Counter
	l := logs[0]
	if want := int64(counter.Count("gpt-test", produced)); produced != "" && l.CompletionTokens != want || l.Quota <= 0 {
		t.Fatalf("log %+v: want the %d completion tokens of %q billed", l, want, produced)
	}
	after := g.Accounts()
	if spent := before.Quota - after.Quota; spent != l.Quota || after.TokenUsed-before.TokenUsed != l.Quota {
		t.Fatalf("balance fell by %d, key used %d; the log says %d", spent, after.TokenUsed-before.TokenUsed, l.Quota)
	}
	rows := errorLogs(t, e, g.Root, "/api/log/", nil)
	if len(rows) != 1 || rows[0].ErrorCode != "stream_idle_timeout" || rows[0].Status != http.StatusOK ||
		rows[0].ChannelID != g.ChannelID || !rows[0].IsStream ||
		!strings.HasPrefix(rows[0].Content, fmt.Sprintf("upstream sent nothing for %d s", secs)) {
		t.Fatalf("error rows = %+v, want one stream_idle_timeout", rows)
	}
}

// A stream whose events keep coming, each within the idle timeout, runs
// longer than the timeout in all and is not cut; keep-alives (comments,
// Anthropic's pings) do not re-arm the timer; once only keep-alives come,
// the stream is ended after the timeout with the ingress's error event,
// billed for the text produced, and logged as an error row.
func TestStreamIdleTimeoutEndsAQuietStream(t *testing.T) {
	const idle = 300 * time.Second // the default
	words := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	for _, tc := range idlePaths {
		t.Run(tc.name, func(t *testing.T) {
			e, clock, timers := timedEnv(t)
			up := newScriptedStream(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.d.typ})
			before := g.Accounts()
			c := startIdleStream(t, e, g.Key, tc.path)

			arms := 1 // the timer armed when the stream began
			if tc.d.start != "" {
				up.send(t, tc.d.start)
				arms += tc.d.startEvents
			}
			var produced strings.Builder
			for i, w := range words {
				up.send(t, tc.d.keepAlive+tc.d.delta(i, w))
				c.waitFor(t, w)
				produced.WriteString(w + " ")
				arms++
				// The loop re-arms before its next read; keep-alives read
				// before the delta re-armed nothing.
				timers.WaitArms(t, arms)
				if got := timers.Arms(); got != arms {
					t.Fatalf("timer armed %d times after %d events: keep-alives re-armed it", got, arms-1)
				}
				clock.Advance(idle * 6 / 10)
				if n := timers.FireDue(); n != 0 {
					t.Fatalf("the idle timer fired %d s after an event", idle*6/10/time.Second)
				}
			}
			// 3 × the timeout since the stream began: only keep-alives now.
			up.send(t, tc.d.keepAlive)
			up.send(t, tc.d.keepAlive)
			clock.Advance(idle * 4 / 10)
			if n := timers.FireDue(); n != 1 {
				t.Fatalf("%d timers fired %v after the last event, want 1", n, idle)
			}
			checkIdleError(t, c.rest(t), tc.failed, 300)
			checkIdleBilling(t, e, g, before, produced.String(), 300)
		})
	}
}

// An upstream that sends its headers and then nothing at all is ended after
// the timeout (StreamIdleTimeoutSeconds, here 10) like one that stalls
// mid-way.
func TestStreamIdleTimeoutEndsAStreamThatNeverBegins(t *testing.T) {
	for _, tc := range idlePaths {
		t.Run(tc.name, func(t *testing.T) {
			e, clock, timers := timedEnv(t)
			up := newScriptedStream(t)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: tc.d.typ})
			g.SetOption("StreamIdleTimeoutSeconds", "10")
			before := g.Accounts()
			c := startIdleStream(t, e, g.Key, tc.path)
			timers.WaitArms(t, 1)
			clock.Advance(9 * time.Second)
			if n := timers.FireDue(); n != 0 {
				t.Fatal("the idle timer fired before its 10 s")
			}
			clock.Advance(time.Second)
			if n := timers.FireDue(); n != 1 {
				t.Fatalf("%d timers fired after 10 s, want 1", n)
			}
			checkIdleError(t, c.rest(t), tc.failed, 10)
			checkIdleBilling(t, e, g, before, "", 10)
		})
	}
}

// timedEnv is a gateway whose idle timers are fakes on a test clock: they
// fire when the test advances the clock past them.
func timedEnv(t *testing.T) (*apptest.Env, *apptest.Clock, *apptest.Timers) {
	t.Helper()
	e := apptest.New(t)
	clock := apptest.NewClock(time.Now())
	timers := apptest.NewTimers(clock)
	e.UseTimers(timers)
	return e, clock, timers
}
