package vertex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// Dialect is Vertex AI for the relay (docs/relay.md, "Adding a provider").
// The registered value holds the process's token cache (Grants); Bind gives
// each channel its own, with its project, region, endpoint and token
// source. Claude models speak the Anthropic Messages API natively through
// rawPredict (Framed: the body without model, with anthropic_version);
// Gemini models are converted chat calls with Gemini's bodies.
type Dialect struct {
	grants *Grants
	ch     *Channel
}

var (
	_ dialect.Dialect         = Dialect{}
	_ dialect.Binder          = Dialect{}
	_ dialect.Native          = Dialect{}
	_ dialect.Framed          = Dialect{}
	_ dialect.HeaderForwarder = Dialect{}
)

var errUnbound = errors.New("vertex: channel fields not bound")

// NewDialect is the dialect to register: every channel bound from it shares
// grants, so channels of one service account share its token.
func NewDialect(grants *Grants) Dialect { return Dialect{grants: grants} }

// Bind validates the channel's fields (New) and returns its dialect.
func (d Dialect) Bind(baseURL, key, other string) (dialect.Dialect, error) {
	ch, err := New(baseURL, key, other, d.grants)
	if err != nil {
		return nil, err
	}
	return Dialect{grants: d.grants, ch: ch}, nil
}

// IsClaude reports whether a Vertex model name is Anthropic's (published
// as claude-…, e.g. claude-sonnet-4@20250514); the rest are Gemini's.
func IsClaude(model string) bool { return strings.HasPrefix(model, "claude-") }

// Authorize puts the service account's access token on the request; a
// refused grant is a *refusal.Error (Kind Key for a dead key).
//
// key is the attempt's key of the channel's pool: a service account of the
// bound key's project (the URL names the project); each has its own
// cached token.
func (d Dialect) Authorize(req *http.Request, key string, _ []byte) error {
	if d.ch == nil {
		return errUnbound
	}
	tokens := d.ch.tokens
	if key != "" && d.grants != nil {
		sa, err := ParseKey(key)
		if err != nil {
			return err
		}
		if sa.ProjectID != d.ch.account.ProjectID {
			return errors.New("vertex: a pool key of another project than the channel's first key")
		}
		tokens = d.grants.Source(sa)
	}
	tok, err := tokens.Token(req.Context())
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// ChatRequest is Claude's rawPredict body, or Gemini's generateContent.
func (d Dialect) ChatRequest(_ string, req *openai.ChatRequest, model string) (string, []byte, error) {
	if d.ch == nil {
		return "", nil, errUnbound
	}
	if IsClaude(model) {
		_, body, err := anthropic.Dialect{}.ChatRequest("", req, model)
		if err != nil {
			return "", nil, err
		}
		if body, err = ClaudeBody(body, req.Stream); err != nil {
			return "", nil, err
		}
		u, err := d.ch.ClaudeURL(model, req.Stream)
		return u, body, err
	}
	_, body, err := gemini.Dialect{}.ChatRequest("", req, model)
	if err != nil {
		return "", nil, err
	}
	u, err := d.ch.GeminiURL(model, req.Stream)
	return u, body, err
}

// DecodeChat reads a Gemini answer (candidates, usageMetadata) or Claude's.
func (Dialect) DecodeChat(raw []byte, model, id string, created int64) (*openai.ChatResponse, openai.Usage, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, openai.Usage{}, err
	}
	if probe.Type == "message" {
		return anthropic.Dialect{}.DecodeChat(raw, model, id, created)
	}
	return gemini.Dialect{}.DecodeChat(raw, model, id, created)
}

// ChatStream reads Claude's events (named: "event: message_start") or
// Gemini's (data only), told apart by the stream's first bytes.
func (Dialect) ChatStream(body io.Reader, model, id string, created int64) openai.ChunkSource {
	br := bufio.NewReader(body)
	head, _ := br.Peek(len("event:"))
	if bytes.Equal(head, []byte("event:")) {
		return anthropic.Dialect{}.ChatStream(br, model, id, created)
	}
	return gemini.Dialect{}.ChatStream(br, model, id, created)
}

// MayRefuseKey: Vertex refuses an account with 401, or 403 and an
// account-wide reason.
func (Dialect) MayRefuseKey(status int) bool { return status == http.StatusForbidden }

// KeyRefused is Classify's verdict.
func (Dialect) KeyRefused(status int, body []byte) bool {
	return Classify(status, body).Kind == refusal.Key
}

func (Dialect) NativeAPI() string { return "anthropic" }

// NativeURL is rawPredict (or streamRawPredict) of a Claude model.
func (d Dialect) NativeURL(_, _, model string, stream bool) string {
	if d.ch == nil {
		return ""
	}
	u, err := d.ch.ClaudeURL(model, stream)
	if err != nil {
		return d.ch.base
	}
	return u
}

// NativeModel: only Claude takes the Messages body.
func (Dialect) NativeModel(model string) bool { return IsClaude(model) }

// PassthroughBody is ClaudeBody.
func (Dialect) PassthroughBody(body []byte, _ http.Header, stream bool) ([]byte, error) {
	return ClaudeBody(body, stream)
}

// SSE: streamRawPredict answers Anthropic's server-sent events as they are.
func (Dialect) SSE(body io.Reader) io.Reader { return body }

// ForwardHeaders passes an Anthropic client's beta flags on a native call
// (Vertex reads anthropic-beta as Anthropic does; the version is in the
// body).
func (Dialect) ForwardHeaders(dst, src http.Header, native bool) {
	if v := src.Values("Anthropic-Beta"); native && len(v) > 0 {
		dst["Anthropic-Beta"] = v
	}
}
