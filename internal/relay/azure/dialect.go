package azure

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// Dialect is Azure OpenAI for the relay (docs/relay.md, "Adding a
// provider"). The registered value is unbound (a nil channel); Bind gives
// each channel its own, with its endpoint, key and api-version. The bodies
// and answers are OpenAI's, so everything but URLs and the credential is
// relay/openai's.
type Dialect struct{ ch *Channel }

var (
	_ dialect.Dialect        = Dialect{}
	_ dialect.Binder         = Dialect{}
	_ dialect.Native         = Dialect{}
	_ dialect.ReasoningLimit = Dialect{}
)

var errUnbound = errors.New("azure: channel fields not bound")

// Bind validates the channel's fields (New) and returns its dialect.
func (Dialect) Bind(baseURL, key, other string) (dialect.Dialect, error) {
	ch, err := New(baseURL, key, other)
	if err != nil {
		return nil, err
	}
	return Dialect{ch: ch}, nil
}

// Authorize sets the "api-key" header (never Authorization, which Azure
// reads as an Entra ID token).
func (d Dialect) Authorize(req *http.Request, key string, _ []byte) error {
	if d.ch == nil {
		return errUnbound
	}
	if key == "" { // not from a key pool: the bound key
		key = d.ch.key
	}
	req.Header.Set("api-key", key)
	req.Header.Del("Authorization")
	return nil
}

// ChatRequest is OpenAI's chat body at the deployment's chat URL.
func (d Dialect) ChatRequest(_ string, req *openai.ChatRequest, model string) (string, []byte, error) {
	if d.ch == nil {
		return "", nil, errUnbound
	}
	_, body, err := openai.Dialect{}.ChatRequest("", req, model)
	if err != nil {
		return "", nil, err
	}
	u, err := d.ch.URL(Chat, model)
	return u, body, err
}

func (Dialect) DecodeChat(raw []byte, model, id string, created int64) (*openai.ChatResponse, openai.Usage, error) {
	return openai.Dialect{}.DecodeChat(raw, model, id, created)
}

func (Dialect) ChatStream(body io.Reader, model, id string, created int64) openai.ChunkSource {
	return openai.Dialect{}.ChatStream(body, model, id, created)
}

// MayRefuseKey: Azure refuses a key with 401, or 403 with a key code.
func (Dialect) MayRefuseKey(status int) bool { return status == http.StatusForbidden }

// KeyRefused is Classify's verdict.
func (Dialect) KeyRefused(status int, body []byte) bool {
	return Classify(status, body).Kind == refusal.Key
}

func (Dialect) NativeAPI() string { return "openai" }

// endpoints are the ingress routes with an Endpoint of their own; other
// OpenAI routes (completions, audio, image edits) follow Azure's layout of
// the same path under the deployment (dated) or /openai/v1 (v1).
var endpoints = map[string]Endpoint{
	"/v1/chat/completions":   Chat,
	"/v1/embeddings":         Embeddings,
	"/v1/images/generations": Images,
	"/v1/responses":          Responses,
}

// NativeURL is the Azure URL of an OpenAI route for a deployment (the
// upstream model). A URL that cannot be made (an empty deployment) is the
// resource's root, which Azure answers 404.
func (d Dialect) NativeURL(_, path, model string, _ bool) string {
	if d.ch == nil {
		return ""
	}
	if e, ok := endpoints[path]; ok {
		u, err := d.ch.URL(e, model)
		if err != nil {
			return d.ch.base
		}
		return u
	}
	rest := strings.TrimPrefix(path, "/v1")
	if d.ch.apiVersion == V1 {
		return d.ch.base + "/openai/v1" + rest
	}
	return d.ch.base + "/openai/deployments/" + url.PathEscape(model) + rest + "?api-version=" + url.QueryEscape(d.ch.apiVersion)
}

// TakesCompletionTokens: Azure's reasoning deployments are OpenAI's
// reasoning models; a deployment named otherwise is not recognised.
func (Dialect) TakesCompletionTokens(model string) bool { return openai.IsReasoningModel(model) }
