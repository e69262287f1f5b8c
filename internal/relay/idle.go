package relay

import (
	"encoding/json"
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

// writeResponsesError reports a failure inside a Responses API stream
// passed through from the upstream: the API's own error event, numbered
// after the seq events relayed before it (a chat-shaped error chunk is not
// an event a Responses client reads).
func writeResponsesError(w io.Writer, msg string, seq int64) {
	b, _ := json.Marshal(map[string]any{"type": "error", "code": "server_error", "message": msg, "param": nil,
		"sequence_number": seq})
	sse.Write(w, "error", b)
}
