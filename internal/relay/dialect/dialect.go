// Package dialect is the relay's contract with one kind of upstream: how to
// put a channel's credentials on a request, how to turn the hub's OpenAI
// chat request into the upstream's own, how to read its answer and its
// stream (chunks and usage), and which refusals condemn the channel's key.
//
// Each upstream kind implements Dialect in its own package (relay/openai,
// relay/anthropic, relay/gemini, relay/azure, relay/bedrock, relay/vertex)
// and is registered for its channel type in one line of the relay
// (internal/relay/dialects.go). What only some upstreams can do is an
// optional interface the relay checks by type assertion, once per channel
// when the routing catalog is built (Native, HeaderForwarder,
// ReasoningLimit, StreamMediaType, Binder, Framed). docs/relay.md, "Adding
// a provider", walks through it.
//
// Implementations are small values (an empty struct, or for a Binder the
// pointer to its bound channel): boxing one in a Dialect allocates nothing
// per call, and the relay resolves (and binds) a channel's dialect once per
// catalog rebuild, not per call.
package dialect

import (
	"io"
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// API is a wire API the relay serves at its ingress; an upstream that
// speaks one of them as it is (Native) gets same-API calls passed through.
type API int

const (
	OpenAI    API = iota // /v1/chat/completions and the other OpenAI routes
	Anthropic            // /v1/messages
	// None: the upstream speaks neither natively; every call it serves is
	// a converted chat call.
	None
)

// apiNames are the names NativeAPI returns, by API. Names rather than API
// values, because relay/openai, which Dialect's signatures import, cannot
// import this package to name them.
var apiNames = map[string]API{"openai": OpenAI, "anthropic": Anthropic}

// NativeOf is the API d speaks as it is, with its Native side; None and nil
// when it speaks none (or names one the relay does not serve).
func NativeOf(d Dialect) (API, Native) {
	n, ok := d.(Native)
	if !ok {
		return None, nil
	}
	api, ok := apiNames[n.NativeAPI()]
	if !ok {
		return None, nil
	}
	return api, n
}

// Dialect is one upstream kind. The relay calls it for every chat call it
// converts (an ingress API the upstream does not speak natively), for the
// channel test and the breakers' probe, and for every refusal.
type Dialect interface {
	// Authorize puts the channel's credential (key, as stored) on an
	// upstream request whose body is body. It runs before the client's
	// forwarded headers are added, which may therefore override a default
	// it set (anthropic-version).
	Authorize(req *http.Request, key string, body []byte) error
	// ChatRequest is the URL and body, under baseURL, of the chat request
	// req in this dialect for the upstream model (after model_mapping).
	// req's completion limit is already capped; ChatRequest does not
	// change req.
	ChatRequest(baseURL string, req *openai.ChatRequest, model string) (url string, body []byte, err error)
	// DecodeChat reads a complete 200 answer to ChatRequest. model is the
	// model the caller asked for, id the relay's request id (answers that
	// carry no id of their own get one from it), created the answer's time.
	// An error the relay answers 400 with (content blocked) is a
	// *ClientError; any other error makes the answer unreadable (502).
	DecodeChat(raw []byte, model, id string, created int64) (*openai.ChatResponse, openai.Usage, error)
	// ChatStream reads a streamed 200 answer to ChatRequest as OpenAI
	// chunks, with its usage.
	ChatStream(body io.Reader, model, id string, created int64) openai.ChunkSource
	// MayRefuseKey reports whether an answer with status (a 4xx other than
	// 401, which always refuses the key) may refuse the channel's key, so
	// that the relay reads its body for KeyRefused.
	MayRefuseKey(status int) bool
	// KeyRefused reports whether an answer of a status MayRefuseKey
	// accepted, with body (at most 64 KiB of it), says the key or its
	// account is unusable for every request: the channel is then disabled.
	// A refusal of this request only (content, a model the key may not
	// use) is not.
	KeyRefused(status int, body []byte) bool
}

// ClientError is a DecodeChat failure that concerns the request, not the
// upstream (Gemini's blocked prompt): the client gets 400 with its text.
type ClientError interface {
	error
	ClientError() bool
}

// Native is implemented by a dialect that speaks one of the relay's ingress
// APIs as it is: calls of that API are passed through byte for byte (the
// model mapped, a stream's usage asked for, a completion limit set), and
// the relay's other OpenAI routes (embeddings, Responses, images, audio)
// are served only by channels whose Native API is OpenAI.
type Native interface {
	// NativeAPI names the API: "openai" or "anthropic".
	NativeAPI() string
	// NativeURL is the upstream URL under baseURL of the ingress route path
	// (/v1/chat/completions, /v1/messages/count_tokens …) for the upstream
	// model, streamed or not (providers that put the model in the path
	// have a separate streaming route).
	NativeURL(baseURL, path, model string, stream bool) string
}

// HeaderForwarder is implemented by a dialect that forwards some of the
// client's request headers (src) to the upstream (dst): the Anthropic
// version and beta flags of an Anthropic client, OpenAI's organization.
// native says the client called the API the upstream speaks natively.
type HeaderForwarder interface {
	ForwardHeaders(dst, src http.Header, native bool)
}

// ReasoningLimit is implemented by a dialect some of whose models refuse
// max_tokens and take max_completion_tokens instead (OpenAI's reasoning
// models): a completion limit the relay adds to such a model's request
// uses that field.
type ReasoningLimit interface {
	TakesCompletionTokens(model string) bool
}

// StreamMediaType is implemented by a dialect whose streams are not
// server-sent events (text/event-stream, the default): the Content-Type a
// streamed answer must have before ChatStream reads it.
type StreamMediaType interface {
	StreamMediaType() string
}
