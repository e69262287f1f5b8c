package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Timer is a stream's idle timer: a *time.Timer, or a test's fake
// (Deps.AfterFunc) that fires when the test says so.
type Timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// afterFunc is time.AfterFunc as a Deps.AfterFunc.
func afterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// codeStreamIdle is the error row of a stream the relay ended because its
// upstream went quiet.
const codeStreamIdle = "stream_idle_timeout"

// streamIdle bounds the silence of an upstream stream (issue 27, §4): the
// header timeout bounds the wait for the answer to begin, and from the
// moment the stream begins every wait for the next upstream event is at
// most the StreamIdleTimeoutSeconds option. Without it an upstream that
// sends its headers and then nothing, or only SSE comments, would hold the
// call, its hold and its connection as long as the client waits. When the
// timer fires it cancels the upstream request, so the loop's pending read
// fails and the loop ends the stream as timed out (streamFailure).
//
// The loop calls event after reading an event that is progress (comments
// never reach it, the SSE reader skips them; it leaves out keep-alive
// pings) and reading before its next read. Between the two it writes to
// the client, and that time is not the upstream's: a client that stops
// reading blocks the write, and must not make its channel look idle (the
// breaker counts an idle stream against the channel).
type streamIdle struct {
	after time.Duration
	timer Timer
	fired atomic.Bool
	// writing is set from event to reading: the timer does not cut then.
	writing atomic.Bool
	held    bool // the loop's own: an event was read since the last reading
}

// watchIdle arms the idle timer of the stream the current attempt began.
// Call stop when the stream loop is done.
func (c *call) watchIdle() *streamIdle {
	c.up.body.off = true // the stream's own timer bounds the body from now on
	w := &streamIdle{after: c.rl.Options.Current().StreamIdle}
	w.timer = c.rl.AfterFunc(w.after, w.onTimeout(c.up.cancel))
	return w
}

// onTimeout is the timer's function: it cancels the upstream unless the
// loop is writing to the client.
func (w *streamIdle) onTimeout(cancel func()) func() {
	return func() {
		if w.writing.Load() {
			return // reading re-arms the timer once the write is done
		}
		w.fired.Store(true)
		cancel()
	}
}

// event marks an upstream event that is progress: until reading, the loop
// is the one busy, not the upstream.
func (w *streamIdle) event() {
	w.held = true
	w.writing.Store(true)
}

// reading re-arms the timer, after an event, before the next read.
func (w *streamIdle) reading() {
	if !w.held {
		return
	}
	w.held = false
	w.writing.Store(false)
	w.timer.Reset(w.after)
}

func (w *streamIdle) stop() { w.timer.Stop() }

// timedOut reports whether the timer fired and cancelled the upstream.
func (w *streamIdle) timedOut() bool { return w.fired.Load() }

// streamFailure logs why the upstream stream ended early and returns what
// a client still connected is told: the idle timeout when it fired (and
// the gateway is not shutting down), else streamBroken's text.
func (c *attempt) streamFailure(err error, idle *streamIdle) string {
	if !idle.timedOut() || c.rl.ending() {
		return c.streamBroken(err)
	}
	secs := int64(idle.after / time.Second)
	// The channel's breaker and the metrics count it like a broken stream:
	// the upstream stopped serving a call it had begun.
	c.upstreamBroke = fmt.Sprintf("stream idle for %d s", secs)
	c.rl.Log.Warn("upstream stream idle, ended", "request_id", c.requestID, "channel", c.channel.ID, "idle_seconds", secs)
	msg := fmt.Sprintf("upstream sent nothing for %d s (request id %s)", secs, c.requestID)
	if c.key != nil && c.rl.ErrorLogs != nil {
		c.writeErrorLog(c.errorRow(c.channel.ID, http.StatusOK, codeStreamIdle, msg,
			fmt.Sprintf("no event for %d s (StreamIdleTimeoutSeconds); the relay cancelled the upstream request", secs)))
	}
	return msg
}

// codeBodyIdle is the error code of an attempt whose upstream sent the
// headers of a non-streaming answer and then stopped sending its body
// (clientError answers it 504).
const codeBodyIdle = "upstream_body_idle_timeout"

// idleBody bounds the body of an upstream answer the way streamIdle bounds
// a stream (issue 27, §4): every wait for its next bytes is at most the
// StreamIdleTimeoutSeconds option. Without it an upstream that sends the
// headers of a non-streaming answer and then part of its body, or
// nothing, and keeps the connection open would hold the call, its hold
// and its connection as long as the client waits. send puts it on every
// answer, so error bodies read for the log or passed on (failure,
// relayVerbatim) are bounded too; a stream loop turns it off (watchIdle),
// its own timer counting only events as progress.
//
// Any bytes are progress here, whitespace included: some upstreams send
// the headers of a non-streaming answer at once and blanks while the model
// works (OpenRouter), and a model may rightly work longer than the bound
// before the JSON begins. The timer runs only while a read waits on the
// upstream: the time the relay spends writing to a slow client between
// reads (relayVerbatim) is not the upstream's. When it fires it cancels
// the upstream request; the pending read then fails, and every read after
// it, with a *bodyIdleError.
type idleBody struct {
	io.ReadCloser
	after  time.Duration
	start  func(time.Duration, func()) Timer // Deps.AfterFunc
	cancel func()                            // the attempt's upstream request
	timer  Timer                             // armed at the first read
	// off: a stream loop reads the body, under its own timer. Set and read
	// by the call's goroutine only.
	off     bool
	reading atomic.Bool
	fired   atomic.Bool
}

// boundBody puts the idle bound on the body of resp, the answer to the
// current attempt's upstream request.
func (c *call) boundBody(resp *http.Response) {
	b := &c.up.body
	b.ReadCloser, b.after, b.start, b.cancel = resp.Body, c.rl.Options.Current().StreamIdle, c.rl.AfterFunc, c.up.cancel
	resp.Body = b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.off {
		return b.ReadCloser.Read(p)
	}
	if b.fired.Load() {
		return 0, &bodyIdleError{after: b.after}
	}
	b.reading.Store(true) // before arming: a timer that fires finds the read waiting
	if b.timer == nil {
		b.timer = b.start(b.after, b.onTimeout)
	} else {
		b.timer.Reset(b.after)
	}
	n, err := b.ReadCloser.Read(p)
	b.reading.Store(false)
	b.timer.Stop()
	if b.fired.Load() {
		return n, &bodyIdleError{after: b.after}
	}
	return n, err
}

// onTimeout is the timer's function: it cancels the upstream request when
// a read is waiting on it.
func (b *idleBody) onTimeout() {
	if !b.reading.Load() {
		return // the read that armed the timer has returned
	}
	b.fired.Store(true)
	b.cancel()
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.ReadCloser.Close()
}

// bodyIdleError is a read of an upstream body that idleBody ended.
type bodyIdleError struct{ after time.Duration }

func (e *bodyIdleError) Error() string {
	return fmt.Sprintf("upstream sent nothing of its answer's body for %d s (StreamIdleTimeoutSeconds); the relay cancelled the request",
		int64(e.after/time.Second))
}

// bodyIdleFailure is the failure of an attempt whose answer's body err
// ended when the idle bound fired (nil when it did not): nothing reached
// the client, so it is a failed attempt like an upstream 5xx, retried on
// another channel and counted by the channel's breaker, and the client,
// when no channel answers, gets 504 upstream_body_idle_timeout. status is
// the status the upstream answered.
func (c *attempt) bodyIdleFailure(status int, err error) *upstreamFailure {
	if err == nil {
		return nil // before idle, which errors.As moves to the heap: no allocation per call
	}
	var idle *bodyIdleError
	if !errors.As(err, &idle) || c.rl.ending() {
		return nil
	}
	return &upstreamFailure{status: status, detail: idle.Error(), retry: true, idle: idle.after}
}

// writeResponsesError reports a failure inside a Responses API stream
// passed through from the upstream: the API's own error event, numbered
// after the seq events relayed before it (a chat-shaped error chunk is not
// an event a Responses client reads).
func writeResponsesError(w io.Writer, msg string, seq int64) {
	b, _ := json.Marshal(map[string]any{"type": "error", "code": "server_error", "message": msg, "param": nil,
		"sequence_number": seq})
	sse.Write(w, "error", b)
}
