package relay

import (
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/relay/dialect"
)

// usageKind says where an endpoint's response reports usage.
type usageKind int

const (
	usageChat       usageKind = iota // usage.prompt_tokens / completion_tokens (chat, completions)
	usageEmbeddings                  // usage.prompt_tokens only
	usageResponses                   // usage.input_tokens / output_tokens (Responses API)
	usageNone                        // images and audio: per-request prices, or local counts
)

// endpoint describes one /v1 route.
type endpoint struct {
	name      string
	path      string // the upstream path on OpenAI-compatible channels
	ingress   dialect.API
	chat      bool // a chat call: Anthropic and Gemini channels can serve it by conversion
	usage     usageKind
	multipart bool
	opaque    bool // answers need not be JSON: audio bytes, plain-text transcripts
	free      bool // nothing is held or billed (count_tokens)
	// responses: the Responses API, converted through chat where the
	// channel does not speak it (responsesapi.go).
	responses bool
}

var (
	epChat          = &endpoint{name: "chat", path: "/v1/chat/completions", chat: true}
	epCompletions   = &endpoint{name: "completions", path: "/v1/completions"}
	epEmbeddings    = &endpoint{name: "embeddings", path: "/v1/embeddings", usage: usageEmbeddings}
	epResponses     = &endpoint{name: "responses", path: "/v1/responses", usage: usageResponses, chat: true, responses: true}
	epImages        = &endpoint{name: "images", path: "/v1/images/generations", usage: usageNone}
	epSpeech        = &endpoint{name: "speech", path: "/v1/audio/speech", usage: usageNone, opaque: true}
	epTranscription = &endpoint{name: "transcription", path: "/v1/audio/transcriptions", usage: usageNone, multipart: true, opaque: true}
	epMessages      = &endpoint{name: "messages", path: "/v1/messages", ingress: dialect.Anthropic, chat: true}
	// Counting is offered for every model a caller may use: Anthropic
	// channels count upstream, the rest locally (counttokens.go).
	epCountTokens = &endpoint{name: "count_tokens", path: "/v1/messages/count_tokens", ingress: dialect.Anthropic, chat: true, free: true}
)

// Handler returns the /v1 routes. Every answer, the mux's own included,
// is in the dialect's error shape: the Anthropic one under /v1/messages,
// the OpenAI one elsewhere (docs/relay.md, Errors). Routes are registered
// without a method, so that a wrong method gets a 405 in that shape, with
// an Allow header, instead of the mux's plain-text one. Each request carries
// the message language in force when it arrived (langWriter).
//
// A call to one of the endpoints goes to its handler directly (Direct),
// without the mux's path cleaning and pattern matching: the mux would pick
// the same handler for it (about 1 % of the gateway's CPU per mux, and a
// call passes the application's mux and this one).
func (rl *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	direct := make(map[string]http.Handler, len(endpoints))
	for _, ep := range endpoints {
		h := only(http.MethodPost, ep.ingress, rl.serve(ep))
		mux.Handle(ep.path, h)
		direct[ep.path] = h
	}
	mux.Handle("/v1/models", only(http.MethodGet, dialect.OpenAI, http.HandlerFunc(rl.listModels)))
	mux.Handle("/v1/models/{model...}", only(http.MethodGet, dialect.OpenAI, http.HandlerFunc(rl.getModel)))
	mux.Handle("/v1/messages/", unknownURL(dialect.Anthropic))
	mux.Handle("/v1/", unknownURL(dialect.OpenAI))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lw := &langWriter{ResponseWriter: w, lang: rl.lang(), start: time.Now()}
		if h := direct[r.URL.Path]; h != nil && routedAsWritten(r) {
			h.ServeHTTP(lw, r)
			return
		}
		mux.ServeHTTP(lw, r)
	})
}

// endpoints are the relayed calls' routes.
var endpoints = [...]*endpoint{epChat, epCompletions, epEmbeddings, epResponses, epImages, epSpeech,
	epTranscription, epMessages, epCountTokens}

// endpointPaths are endpoints' paths.
var endpointPaths = func() map[string]bool {
	paths := make(map[string]bool, len(endpoints))
	for _, ep := range endpoints {
		paths[ep.path] = true
	}
	return paths
}()

// Direct reports whether r is a call to one of the relay's endpoints that
// a ServeMux would route by its exact path: the path is one of theirs as
// written (no escapes: the mux matches the escaped path; clean by
// construction, so no redirect), and the method is not CONNECT (whose
// path the mux does not clean). Such a request may skip the muxes; any
// other goes through them.
func Direct(r *http.Request) bool {
	return endpointPaths[r.URL.Path] && routedAsWritten(r)
}

// routedAsWritten reports whether a mux routes r by its path as written:
// no escapes, and not a CONNECT.
func routedAsWritten(r *http.Request) bool {
	return r.URL.RawPath == "" && r.Method != http.MethodConnect
}

// only serves h for method (GET also answers HEAD, as the mux does) and
// answers any other method 405 in the ingress dialect's shape.
func only(method string, ingress dialect.API, h http.Handler) http.Handler {
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", allow)
		writeError(w, ingress, errf(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			msgMethodFmt, r.Method, r.URL.Path, allow))
	})
}

// unknownURL answers a path the relay does not serve, with OpenAI's text.
func unknownURL(ingress dialect.API) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, ingress, errf(http.StatusNotFound, "invalid_request_error", "unknown_url",
			"Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
}
