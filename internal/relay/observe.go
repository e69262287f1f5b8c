package relay

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// What the relay tells the outside about its calls: metrics and the access
// log (Deps.Observer), and the Server-Timing header of every /v1 answer
// (docs/operations.md, Metrics).

// Observer learns how /v1 calls went. Its methods run on the call's
// goroutine after the answer is written, so they must be quick (counters,
// one log line) and must not keep the report.
type Observer interface {
	// CallDone is called once per relayed call (the POST endpoints).
	CallDone(r *Report)
	// UpstreamFailed is called for each failed upstream attempt: the
	// channel's name and the kind of failure (UpstreamErrorKinds).
	UpstreamFailed(channel, kind string)
}

// Report is one finished call. It never holds a key, a prompt or an answer.
type Report struct {
	RequestID string
	Endpoint  string // chat, messages, embeddings…
	UserID    int64
	Username  string
	TokenName string
	// Model is the priced model the call was served as; ModelOther for a
	// model without a price (a client's invention: bounded labels), ""
	// when the call was refused before its body named one.
	Model string
	// Channel is the name of the channel that answered, or of the last one
	// tried; "" when none was.
	Channel string
	Status  int
	// Billing is "balance", "plan", or "" when nothing was reserved.
	Billing          string
	Stream           bool
	PromptTokens     int64
	CompletionTokens int64
	Quota            int64 // the call's cost in quota units (0: nothing billed)
	// Upstream is the time spent waiting for upstreams until the answer's
	// header was written (every attempt; for a stream: until the upstream's
	// response header), Gateway the rest of that time: the relay's own
	// overhead. Total runs until the call ended (a stream's last byte).
	Upstream, Gateway, Total time.Duration
}

// ModelOther is Report.Model for models without a price.
const ModelOther = "other"

// Kinds of upstream failure (Observer.UpstreamFailed).
const (
	FailUnreachable = "unreachable"  // no answer: refused, reset, timeout
	FailRateLimited = "rate_limited" // 429
	FailServerError = "server_error" // 5xx
	FailKeyRefused  = "key_refused"  // the channel's key was refused: channel disabled
	FailBadResponse = "bad_response" // a 200 the relay could not read
	FailStream      = "stream_broken"
	FailShutdown    = "shutdown"
)

// UpstreamErrorKinds lists every kind, for metrics to pre-create.
var UpstreamErrorKinds = []string{FailUnreachable, FailRateLimited, FailServerError, FailKeyRefused,
	FailBadResponse, FailStream, FailShutdown}

// failureKind classifies a failed attempt; "" when err is not an upstream
// failure (the client left, a bad request).
func failureKind(err error) string {
	if err == nil {
		return "" // before f, which errors.As moves to the heap
	}
	var f *upstreamFailure
	if !errors.As(err, &f) {
		return ""
	}
	switch {
	case f.unreadable:
		return FailBadResponse
	case f.status == 0 && f.neutral:
		return FailShutdown
	case f.status == 0:
		return FailUnreachable
	case f.status == http.StatusTooManyRequests:
		return FailRateLimited
	case f.status >= 500:
		return FailServerError
	}
	return FailKeyRefused // the only other failures send returns
}

// observeAttempt tells the observer about a failed attempt on channel u,
// whose answer is a.
func (c *call) observeAttempt(u *upstream, a *answer, err error) {
	o := c.rl.Observer
	if o == nil {
		return
	}
	if a.upstreamBroke != "" {
		o.UpstreamFailed(u.Name, FailStream)
		return
	}
	if err == nil {
		return
	}
	if kind := failureKind(err); kind != "" {
		o.UpstreamFailed(u.Name, kind)
	}
}

// report tells the observer how the call went (deferred in serve, after
// settlement and after a panic's answer).
func (c *call) report() {
	o := c.rl.Observer
	if o == nil && c.span == nil {
		return
	}
	r := Report{RequestID: c.requestID, Endpoint: c.ep.name, Stream: c.meta.stream,
		PromptTokens: c.out.usage.PromptTokens, CompletionTokens: c.out.usage.CompletionTokens, Quota: c.charge.Cost,
		Total: time.Since(c.start)}
	if c.key != nil {
		r.UserID, r.Username, r.TokenName = c.key.user.ID, c.key.user.Username, c.key.token.Name
	}
	if c.meta.model != "" {
		r.Model = ModelOther
		if c.snap != nil {
			if _, ok := c.snap.prices[c.meta.model]; ok {
				r.Model = c.meta.model
			}
		}
	}
	if u := c.out.channel; u != nil {
		r.Channel = u.Name
	} else if c.sentTo != nil {
		r.Channel = c.sentTo.Name
	}
	switch {
	case c.billedByPlan():
		r.Billing = "plan"
	case c.charge.Reserved():
		r.Billing = "balance"
	}
	if t := c.timing; t != nil {
		r.Status, r.Upstream, r.Gateway = t.status, t.upAtHeader, t.gwAtHeader
	}
	c.endSpan(&r)
	if o != nil {
		o.CallDone(&r)
	}
}

// addUpstream adds d to the time this call spent waiting for upstreams.
func (c *call) addUpstream(d time.Duration) {
	if c.timing != nil {
		c.timing.upstream += d
	}
}

// timingOf finds the langWriter Handler gave w (nil outside Handler).
func timingOf(w http.ResponseWriter) *langWriter {
	for {
		switch v := w.(type) {
		case *langWriter:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// setServerTiming puts the Server-Timing header on the answer as its
// header is written: the gateway's own time and the upstream's so far, in
// milliseconds (for a stream, the upstream's is its time to the response
// header; for a JSON answer, to its last byte).
func (w *langWriter) setServerTiming(status int) {
	w.headerDone = true
	w.status = status
	if w.start.IsZero() {
		return
	}
	w.upAtHeader = w.upstream
	w.gwAtHeader = max(time.Since(w.start)-w.upstream, 0)
	var buf [64]byte
	b := append(buf[:0], "gw;dur="...)
	b = strconv.AppendFloat(b, float64(w.gwAtHeader.Microseconds())/1000, 'f', -1, 64)
	b = append(b, ", upstream;dur="...)
	b = strconv.AppendFloat(b, float64(w.upAtHeader.Microseconds())/1000, 'f', -1, 64)
	w.ResponseWriter.Header().Set("Server-Timing", string(b))
}

func (w *langWriter) WriteHeader(code int) {
	if !w.headerDone && code >= 200 {
		w.setServerTiming(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *langWriter) Write(b []byte) (int, error) {
	if !w.headerDone {
		w.setServerTiming(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}
