package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/responses"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// The Responses API on every channel (docs/relay.md, "Responses
// conversion"). A channel whose dialect speaks the OpenAI API natively is
// first asked natively; one whose upstream answers /v1/responses with 404
// or 405 (a chat-only OpenAI-compatible server) is switched to conversion,
// Responses ⇄ OpenAI chat ⇄ its dialect, the way every other dialect is
// always served. The switch is remembered in memory per channel and
// retried natively after responsesRetryAfter; a channel's setting
// responses_api (channel.ResponsesAuto, Native, Convert) overrides it.

// responsesRetryAfter is how long a channel found without the Responses API
// is served by conversion before it is asked natively again.
const responsesRetryAfter = 24 * time.Hour

// responsesLearned remembers, per channel id, when its upstream was found
// to answer /v1/responses with 404 or 405. It is per node and forgotten on
// restart: relearning costs one refused request.
type responsesLearned struct {
	mu   sync.Mutex
	seen map[int64]time.Time
}

// unsupported reports whether channel id was found without the Responses
// API less than responsesRetryAfter before now; an older finding is
// forgotten, so the next call tries natively again.
func (l *responsesLearned) unsupported(id int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.seen[id]
	if ok && now.Sub(at) >= responsesRetryAfter {
		delete(l.seen, id)
		return false
	}
	return ok
}

// learn records that channel id answered /v1/responses with 404 or 405 at
// now.
func (l *responsesLearned) learn(id int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[int64]time.Time{}
	}
	l.seen[id] = now
}

// errNoResponsesAPI is passthroughOpenAI's answer when the upstream refused
// /v1/responses as a route it does not have (404, 405) on a channel left to
// learn (responses_api auto): the call is converted instead.
var errNoResponsesAPI = errors.New("upstream has no /v1/responses")

// attemptResponses serves a Responses call on channel u: passed through to
// an upstream that speaks it, converted for every other.
func (c *attempt) attemptResponses(u *upstream) error {
	if !c.responsesNative(u) {
		return c.convertChat(u)
	}
	err := c.passthroughOpenAI(u)
	if !errors.Is(err, errNoResponsesAPI) {
		return err
	}
	c.rl.responsesLearned.learn(u.ID, c.rl.now())
	c.rl.Log.Info("upstream has no Responses API; converting through chat", "channel", u.ID)
	return c.convertChat(u)
}

// responsesNative reports whether a Responses call goes to u as it is.
func (c *call) responsesNative(u *upstream) bool {
	if u.api != dialect.OpenAI {
		return false
	}
	switch u.responsesAPI {
	case channel.ResponsesNative:
		return true
	case channel.ResponsesConvert:
		return false
	}
	return !c.rl.responsesLearned.unsupported(u.ID, c.rl.now())
}

// learnsResponses reports whether an upstream answer to a native Responses
// call means the upstream lacks the route: 404 or 405 on a channel left on
// auto, unless the 404 says the model is unknown (OpenAI answers an
// unknown model 404 model_not_found on every route: that is the client's
// answer, and the channel keeps its Responses API). The body read to tell
// is put back for relayVerbatim.
func (c *call) learnsResponses(u *upstream, resp *http.Response) bool {
	status := resp.StatusCode
	if !c.ep.responses || u.responsesAPI != channel.ResponsesAuto || status != 404 && status != 405 {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return !bytes.Contains(head, []byte("model_not_found"))
}

// responsesRequest decodes the body of a Responses call, once per call.
func (c *call) responsesRequest() (*responses.Request, error) {
	if c.respIn != nil {
		return c.respIn, nil
	}
	var in responses.Request
	if err := json.Unmarshal(c.body, &in); err != nil {
		return nil, badRequest(MsgInvalidJSON)
	}
	c.respIn = &in
	return c.respIn, nil
}

// writeEvents writes converted stream events to the client.
func (c *call) writeEvents(evs []sse.Event) error {
	for _, ev := range evs {
		if err := sse.Write(c.w, ev.Name, ev.Data); err != nil {
			return err
		}
	}
	return nil
}

// chatUsageOf is the billed usage u in chat terms: a converted Responses
// answer reports exactly what is billed, a local count included.
func chatUsageOf(u pricing.Usage) openai.Usage {
	return openai.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens:         u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: u.CachedTokens}}
}
