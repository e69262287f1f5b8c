package relay

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/textfield"
)

// ErrorLogWriter takes the error logs of failed calls (store.LogError) off
// the request path. TryWrite must never block: under a flood of failing
// calls a row is shed rather than slowing any call (logwriter.TryWrite).
type ErrorLogWriter interface {
	TryWrite(row store.Log) bool
}

// Which failures leave an error row (docs/decisions/logs.md, "Error logs"):
//
//   - a refusal answered after the key was identified (the key itself
//     refused — disabled, expired, used up, its owner banned —, quota,
//     model not allowed, subnet, pinning, a bad body, no price, no
//     channel, …): one row with the status, code and message the client
//     got, in the language it got it;
//   - each failed upstream attempt, retried or not: one row with its
//     channel, the status the upstream answered (0: none), the code and
//     message the client gets for such a failure, and the upstream's own
//     message with secrets removed. When the call's final answer is the
//     last attempt's failure, that row already says it: no second row;
//   - an upstream error answer passed on to the client (a 4xx that
//     concerns the request, not the channel): one row with its channel,
//     status and beginning (code upstream_error);
//   - a stream broken mid-way (status 200 was sent): one row, code
//     stream_broken, next to the call's consume log; a stream the relay
//     ended because its upstream went quiet: code stream_idle_timeout
//     (idle.go).
//
// Failures before a key is identified (no key, an unknown key) are not
// recorded: there is no user to file them under, and anyone could fill the
// table with them. Nor is a call whose client left before any answer.

// Codes of error rows that no client error carries.
const (
	codeStreamBroken = "stream_broken"
	// codeUpstreamAnswer: an upstream error answer passed on as it came;
	// the same code a converted call's passed-on refusal carries.
	codeUpstreamAnswer = "upstream_error"
	codeInternal       = "internal_error"
)

// Bounds of the stored texts: content is the client's message (short);
// the upstream's message is cut to a size an admin can read, far below a
// MySQL TEXT column.
var (
	errorContentText  = textfield.Field{Label: "content", MaxChars: 1024, MaxBytes: 4096}
	upstreamErrorText = textfield.Field{Label: "upstream_message", MaxChars: 2048, MaxBytes: 8192, Multiline: true}
	// The requested model is the client's text, unchecked when the call is
	// refused for it: a NUL or a stray byte would fail the row (and, before
	// the writer isolated bad rows, its whole batch) on PostgreSQL.
	errorModelText = textfield.Field{Label: "model_name", MaxChars: 191}
)

// logRefusal records err, the failure serve answered, unless its key is
// unknown, the client left, or the last failed attempt's row says the same.
func (c *call) logRefusal(err error) {
	if c.key == nil || c.rl.ErrorLogs == nil {
		return
	}
	var e *apiError
	if !errors.As(err, &e) {
		if c.r.Context().Err() != nil {
			return // the client left: nothing was refused
		}
		// what writeError answers for an internal failure
		e = &apiError{status: http.StatusInternalServerError, message: "internal error", code: codeInternal}
	}
	lang := langOf(c.w) // the language the client was answered in
	if c.failed != nil {
		if last := c.failed.clientError(); last.status == e.status && last.code == e.code && last.text(lang) == e.text(lang) {
			return
		}
	}
	// A failure after an upstream request that is no upstreamFailure is
	// the upstream's own refusal passed on (a converted call's 4xx): it
	// names its channel, and its message may carry the upstream's text.
	var channelID int64
	message := e.text(lang) // what the client read
	if c.sentTo != nil {
		channelID, message = c.sentTo.ID, redactSecrets(message, c.sentTo)
	}
	c.writeErrorLog(c.errorRow(channelID, e.status, e.code, message, ""))
}

// maxLoggedAnswer bounds what is kept of an upstream error answer relayed
// to the client as it came.
const maxLoggedAnswer = 2048

// logRelayed records an upstream error answer (a 4xx the relay passes on
// verbatim) on the channel it came from; head is its beginning. The client
// got that text, so the user sees it too, secrets removed.
func (c *call) logRelayed(status int, head string) {
	if c.key == nil || c.rl.ErrorLogs == nil || c.sentTo == nil {
		return
	}
	text := redactSecrets(strings.TrimSpace(head), c.sentTo)
	c.writeErrorLog(c.errorRow(c.sentTo.ID, status, codeUpstreamAnswer, text, text))
}

// headWriter keeps the first max bytes written to it and accepts the rest.
type headWriter struct {
	max int
	buf []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	if n := min(len(p), h.max-len(h.buf)); n > 0 {
		h.buf = append(h.buf, p[:n]...)
	}
	return len(p), nil
}

func (h *headWriter) String() string { return string(h.buf) }

// logAttempt records a failed attempt on channel u.
func (c *call) logAttempt(u *upstream, fail *upstreamFailure) {
	c.failed = fail
	if c.key == nil || c.rl.ErrorLogs == nil {
		return
	}
	e := fail.clientError()
	c.writeErrorLog(c.errorRow(u.ID, fail.status, e.code, e.text(langOf(c.w)), redactSecrets(fail.detail, u)))
}

// logStreamBroken records a stream that broke after its 200 was sent; msg
// is what the client was told in the stream.
func (c *attempt) logStreamBroken(err error, msg string) {
	if c.key == nil || c.rl.ErrorLogs == nil || c.channel == nil {
		return
	}
	c.writeErrorLog(c.errorRow(c.channel.ID, http.StatusOK, codeStreamBroken, msg, redactSecrets(err.Error(), c.channel)))
}

func (c *call) errorRow(channelID int64, status int, code, message, upstreamMessage string) store.Log {
	return store.Log{
		UserID: c.key.user.ID, Username: c.key.user.Username, Group: c.key.user.Group,
		TokenID: c.key.token.ID, TokenName: c.key.token.Name, Type: store.LogError,
		ModelName: errorModelText.Clean(c.meta.model), ChannelID: channelID, RequestID: c.requestID,
		ElapsedTime: time.Since(c.start).Milliseconds(), IsStream: c.meta.stream, SessionKey: sessionKey(c.r),
		Status: status, ErrorCode: code, Content: errorContentText.Clean(message),
		UpstreamMessage: upstreamErrorText.Clean(upstreamMessage),
	}
}

func (c *call) writeErrorLog(row store.Log) {
	c.rl.ErrorLogs.TryWrite(row) // a shed row is counted and reported by the writer
}

// secretPatterns find credentials an upstream may echo in an error: keys
// of the common providers (sk-…, sk-ant-…, Google's AIza…), bearer
// tokens, key-like query parameters (Gemini's key=) and JSON or header
// fields named like a key, and the userinfo of a URL. A pattern runs only
// when one of its hints (lower case) is in the text: most upstream errors
// hold none, and the regular expressions cost far more than the look-ups.
var secretPatterns = []struct {
	hints []string
	re    *regexp.Regexp
	repl  string
}{
	{[]string{"bearer"}, regexp.MustCompile(`(?i)\bbearer\s+[^\s"',;}]+`), "Bearer ***"},
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{4,}`), "sk-***"},
	{[]string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{10,}`), "***"},
	{[]string{"key=", "token="}, regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|api-key|access_token|token)=)[^&\s"']+`), "${1}***"},
	// a value may be quoted, also inside a JSON string (\")
	{[]string{"key", "auth", "token", "secret"}, regexp.MustCompile(`(?i)((?:x-api-key|x-goog-api-key|api[_-]?key|authorization|access[_-]?token|secret)\\?["']?\s*[:=]\s*\\?["']?(?:bearer\s+)?)[^\s"'\\,;}]+`), "${1}***"},
	{[]string{"@"}, regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@"']+@`), "${1}***@"},
}

// redactSecrets removes from an upstream's message channel u's key, the
// userinfo of u's base URL and anything looking like a credential
// (secretPatterns).
func redactSecrets(s string, u *upstream) string {
	if u != nil {
		// Every line of a multi-key channel, and the key as a whole.
		s = scrub(s, u.Key)
		for _, k := range strings.Split(u.Key, "\n") {
			if k = strings.TrimSpace(k); len(k) >= 4 {
				s = strings.ReplaceAll(s, k, "***")
			}
		}
		if b, err := url.Parse(u.BaseURL); err == nil && b.User != nil {
			if p, ok := b.User.Password(); ok && p != "" {
				s = strings.ReplaceAll(s, p, "***")
			}
			if n := b.User.Username(); len(n) >= 4 {
				s = strings.ReplaceAll(s, n, "***")
			}
		}
	}
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		for _, h := range p.hints {
			if strings.Contains(lower, h) {
				s = p.re.ReplaceAllString(s, p.repl)
				lower = strings.ToLower(s)
				break
			}
		}
	}
	return s
}
