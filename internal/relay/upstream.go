package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// roundTrip sends req on the relay's transport and answers as
// http.Client.Do did with a CheckRedirect that refuses to follow (a
// redirect is the answer, as it came, so a channel's key never follows one
// to another host): basic auth from the URL's user when no Authorization
// is set, errors that name the method and the redacted URL, the request
// body closed on failure. Without the client's layers (four frames, 1.2
// KB): they are on a call's deepest stack path, a new connection's dial
// (docs/performance.md, "A stream's stack").
func (rl *Relay) roundTrip(req *http.Request) (*http.Response, error) {
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		req.SetBasicAuth(u.Username(), password)
	}
	resp, err := rl.Transport.RoundTrip(req)
	if err == nil && resp == nil {
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rl.Transport)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		op := "Get"
		if req.Method != "" {
			op = req.Method[:1] + strings.ToLower(req.Method[1:])
		}
		return nil, &url.Error{Op: op, URL: req.URL.Redacted(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

// upstreamFailure is an upstream that did not answer usefully before
// anything reached the client.
type upstreamFailure struct {
	status int    // 0 when no response came
	detail string // for logs and the channel's last_error; never a key
	retry  bool   // another channel may succeed
	// unreadable: the upstream answered 200 with something that is not
	// its API's format (an HTML error page, broken JSON).
	unreadable bool
	// neutral: not the channel's failure for its breaker (a 429, a refused
	// key, the gateway shutting down; breakers.go).
	neutral bool
	// keyRefused: the upstream refused the attempt's key for good; the
	// channel's other keys may answer (keypool.go).
	keyRefused bool
	// idle: the upstream stopped sending its answer's body for this long
	// (idleBody); the client is told 504.
	idle time.Duration
}

// unreadableAnswer is a 200 whose body is not the API's format: another
// channel may do better, and the client is told the answer was unreadable.
func unreadableAnswer(detail string) *upstreamFailure {
	return &upstreamFailure{status: http.StatusBadGateway, detail: detail, retry: true, unreadable: true}
}

func (f *upstreamFailure) Error() string {
	return fmt.Sprintf("upstream status %d: %s", f.status, f.detail)
}

// clientError is what the client gets when no channel answered.
func (f *upstreamFailure) clientError() *apiError {
	if f.idle > 0 {
		return errf(http.StatusGatewayTimeout, "upstream_error", codeBodyIdle, msgBodyIdleFmt, MsgUpstreamFailed, int64(f.idle/time.Second))
	}
	if f.unreadable {
		return errf(http.StatusBadGateway, "upstream_error", "bad_upstream_response", MsgBadUpstream)
	}
	if f.status == http.StatusTooManyRequests {
		return errf(http.StatusTooManyRequests, "rate_limit_error", "upstream_rate_limited", "%s: 上游限流 (429)", MsgUpstreamFailed)
	}
	if f.status == 0 {
		return errf(http.StatusBadGateway, "upstream_error", "upstream_unreachable", "%s: 无法连接上游", MsgUpstreamFailed)
	}
	return errf(http.StatusBadGateway, "upstream_error", "upstream_error", "%s: 上游返回 %d", MsgUpstreamFailed, f.status)
}

// newUpstreamRequest builds the request to channel u with its credentials
// (never the caller's) and the client headers its dialect forwards
// (dialect.HeaderForwarder). Hop-by-hop and identity headers of the client
// are not forwarded.
func (c *call) newUpstreamRequest(u *upstream, url string, body []byte, contentType string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(c.upstreamContext(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	setHeader(req.Header, "Content-Type", contentType)
	key := c.keyFor(u)
	if err := u.dialect.Authorize(req, key, body); err != nil {
		// No credential could be made (a token grant failed): the
		// channel's failure, another may answer; a grant refused for good
		// (the key deleted or disabled) disables the channel as a 401 does.
		f := &upstreamFailure{detail: scrub(err.Error(), key), retry: true}
		var r *refusal.Error
		if errors.As(err, &r) && r.Kind == refusal.Key {
			f.status = r.Status
			return nil, c.disable(u, f)
		}
		return nil, f
	}
	if u.forward != nil {
		u.forward.ForwardHeaders(req.Header, c.r.Header, u.api == c.ep.ingress)
	}
	if c.headerValues[1] != "" {
		req.Header["Accept"] = c.headerValues[1:2:2] // the client's
	}
	req.Header["X-Request-Id"] = c.headerValues[0:1:1]
	return req, nil
}

// jsonContentType is the value slice of a JSON body's Content-Type, shared
// by every upstream request (setHeader).
var jsonContentType = []string{"application/json"}

// setHeader sets a canonical key to value, with no allocation for the
// usual JSON content type.
func setHeader(h http.Header, key, value string) {
	if value == jsonContentType[0] {
		h[key] = jsonContentType
		return
	}
	h.Set(key, value)
}

// post sends body to url on channel u: newUpstreamRequest, then send.
func (c *call) post(u *upstream, url string, body []byte, contentType string) (*http.Response, error) {
	c.sentTo = u
	req, err := c.newUpstreamRequest(u, url, body, contentType)
	if err != nil {
		return nil, err
	}
	return c.send(u, req)
}

// send performs one upstream call. A connection error, a timeout, a 5xx or
// a 429 is a retryable failure (a 429 also cools the channel down). An
// answer that refuses the channel's key (keyRefused: a 401, or a status the
// dialect names, 403 or Gemini's 400, with the provider's invalid-key or
// account code) disables the
// channel automatically and another is tried. Other statuses, other 403s
// (a content refusal) included, are returned for the caller to relay: they
// concern this request, not the channel.
func (c *call) send(u *upstream, req *http.Request) (resp *http.Response, err error) {
	req, span := c.upstreamSpan(u, req)
	if span != nil {
		defer func() { endUpstreamSpan(span, resp, err) }()
	}
	sent := time.Now()
	resp, err = c.rl.roundTrip(req)
	c.addUpstream(time.Since(sent))
	if err != nil {
		if c.r.Context().Err() != nil {
			return nil, c.r.Context().Err() // the client left: nothing to retry for
		}
		if c.rl.ending() {
			return nil, &upstreamFailure{detail: "the gateway is shutting down", neutral: true} // no other channel either
		}
		return nil, &upstreamFailure{detail: scrub(err.Error(), c.cred.Key), retry: true}
	}
	c.boundBody(resp)
	switch status := resp.StatusCode; {
	case status == http.StatusTooManyRequests:
		c.rl.coolDown(u.ID, c.cred.ID)
		f := c.failure(u, resp, true)
		f.neutral = true // the cooldown handles it
		return nil, f
	case status >= 500:
		return nil, c.failure(u, resp, true)
	case status == http.StatusUnauthorized:
		return nil, c.disable(u, c.failure(u, resp, true))
	case status >= 400 && status < 500 && u.dialect.MayRefuseKey(status):
		head, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		if keyRefused(u.dialect, status, head) {
			resp.Body.Close()
			detail := scrub(strings.TrimSpace(string(head)), c.cred.Key)
			f := &upstreamFailure{status: status, detail: detail[:min(len(detail), 2048)], retry: true}
			return nil, c.disable(u, f)
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	}
	return resp, nil
}

// disable retires the key of channel u the upstream refused, with the
// failure as its reason (the channel goes out with its last key,
// keypool.go), and returns the failure: the call tries the channel's next
// key, if any.
func (c *call) disable(u *upstream, f *upstreamFailure) *upstreamFailure {
	c.rl.retireKey(context.WithoutCancel(c.r.Context()), u.ID, c.cred, f.status, f.detail)
	if c.spent == nil {
		c.spent = map[string]bool{}
	}
	c.spent[c.cred.ID] = true
	f.neutral = true // the key is out for every model: no breaker needed
	f.keyRefused = true
	return f
}

// failure reads (a bounded part of) a failed response for the log.
func (c *call) failure(u *upstream, resp *http.Response, retry bool) *upstreamFailure {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return &upstreamFailure{status: resp.StatusCode, detail: scrub(strings.TrimSpace(string(b)), c.cred.Key), retry: retry}
}

// scrub removes a channel key from a text that may be shown or logged.
func scrub(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "***")
	}
	return s
}

// relayVerbatim copies a non-retryable upstream answer (a 400, a 404, …) to
// the client as it came: the upstream's message is the most useful one.
func (c *call) relayVerbatim(resp *http.Response) error {
	defer resp.Body.Close()
	c.copyHeaders(resp.Header)
	c.w.WriteHeader(resp.StatusCode)
	head := &headWriter{max: maxLoggedAnswer}
	_, err := io.Copy(c.w, io.TeeReader(io.LimitReader(resp.Body, 16<<20), head))
	c.logRelayed(resp.StatusCode, head.String())
	return err
}

// copyHeaders copies to dst the upstream response headers a client may
// see: what describes the body, the upstream's request id and its rate-limit
// state. Everything else stays here: account names (openai-organization,
// openai-project), cookies, the upstream's server, proxies and CDN
// (server, via, cf-*, x-envoy-*), and headers the relay sets itself
// (X-Request-Id, lengths, hop-by-hop headers). Keys are canonical
// (http.ReadResponse), so a switch and prefix tests do (the relay is
// benchmarked).
//
// On a plan-billed call the rate-limit headers are the relay's, for the
// caller's plan (plans.go): the channel's, which describe the operator's
// upstream account, are dropped.
func (c *call) copyHeaders(src http.Header) {
	dst, own := c.w.Header(), c.billedByPlan()
	for k, v := range src {
		if forwardedHeader(k) && !(own && isRateLimitHeader(k)) {
			dst[k] = v
		}
	}
}

// isRateLimitHeader reports whether the canonical header k is a rate-limit
// header of some dialect.
func isRateLimitHeader(k string) bool {
	return strings.HasPrefix(k, "X-Ratelimit-") || strings.HasPrefix(k, "Anthropic-Ratelimit-") ||
		strings.HasPrefix(k, "Ratelimit-")
}

// forwardedHeader reports whether the canonical upstream header k reaches
// the client (docs/relay.md, "Upstream headers").
func forwardedHeader(k string) bool {
	switch k {
	case "Content-Type", "Content-Encoding", "Content-Disposition", "Retry-After",
		"Request-Id": // Anthropic's id of the request, for a support ticket
		return true
	}
	return isRateLimitHeader(k)
}
