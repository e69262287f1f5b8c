package relay

import "net/http"

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
	ingress   dialect
	chat      bool // a chat call: Anthropic and Gemini channels can serve it by conversion
	usage     usageKind
	multipart bool
	opaque    bool // answers need not be JSON: audio bytes, plain-text transcripts
}

var (
	epChat          = &endpoint{name: "chat", path: "/v1/chat/completions", chat: true}
	epCompletions   = &endpoint{name: "completions", path: "/v1/completions"}
	epEmbeddings    = &endpoint{name: "embeddings", path: "/v1/embeddings", usage: usageEmbeddings}
	epResponses     = &endpoint{name: "responses", path: "/v1/responses", usage: usageResponses}
	epImages        = &endpoint{name: "images", path: "/v1/images/generations", usage: usageNone}
	epSpeech        = &endpoint{name: "speech", path: "/v1/audio/speech", usage: usageNone, opaque: true}
	epTranscription = &endpoint{name: "transcription", path: "/v1/audio/transcriptions", usage: usageNone, multipart: true, opaque: true}
	epMessages      = &endpoint{name: "messages", path: "/v1/messages", ingress: dialectAnthropic, chat: true}
)

// Handler returns the /v1 routes. Each request carries the message
// language in force when it arrived (langWriter).
func (rl *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", rl.serve(epChat))
	mux.Handle("POST /v1/completions", rl.serve(epCompletions))
	mux.Handle("POST /v1/embeddings", rl.serve(epEmbeddings))
	mux.Handle("POST /v1/responses", rl.serve(epResponses))
	mux.Handle("POST /v1/images/generations", rl.serve(epImages))
	mux.Handle("POST /v1/audio/speech", rl.serve(epSpeech))
	mux.Handle("POST /v1/audio/transcriptions", rl.serve(epTranscription))
	mux.Handle("POST /v1/messages", rl.serve(epMessages))
	mux.HandleFunc("GET /v1/models", rl.listModels)
	mux.HandleFunc("GET /v1/models/{model...}", rl.getModel)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, dialectOpenAI, errf(http.StatusNotFound, "invalid_request_error", "unknown_url",
			"Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(&langWriter{ResponseWriter: w, lang: rl.lang()}, r)
	})
}
