package fakeupstream

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// failure is an error answer, written in each dialect's own shape.
type failure struct {
	status  int
	message string
	// kind is OpenAI's error "type" or Anthropic's; empty derives it from
	// the status.
	kind string
	// code is OpenAI's error "code" (null when empty), or the reason of
	// Gemini's ErrorInfo detail (no details when empty).
	code string
}

// Messages of the real APIs' key checks.
const (
	openAINoKey = "You didn't provide an API key. You need to provide your API key in an " +
		"Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the " +
		"password field (with blank username) if you're accessing the API from your browser and " +
		"are prompted for a username. You can obtain an API key from " +
		"https://platform.openai.com/account/api-keys."
	openAIBadKey = "Incorrect API key provided: %s. You can find your API key at " +
		"https://platform.openai.com/account/api-keys."
	anthropicNoKey      = "x-api-key header is required"
	anthropicBadKey     = "invalid x-api-key"
	anthropicNoVersion  = "anthropic-version: header is required"
	geminiNoKey         = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	geminiBadKey        = "API key not valid. Please pass a valid API key."
	geminiAPIKeyInvalid = "API_KEY_INVALID"
)

// presentedKey returns the credential r carries in the dialect's header.
func presentedKey(dialect string, r *http.Request) string {
	switch dialect {
	case Anthropic:
		return r.Header.Get("x-api-key")
	case Gemini:
		if k := r.Header.Get("x-goog-api-key"); k != "" {
			return k
		}
		return r.URL.Query().Get("key")
	}
	auth := r.Header.Get("Authorization")
	if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

// authorize checks the key (and Anthropic's version header) the way the
// dialect's API does; nil means accepted.
func (s *Server) authorize(dialect string, r *http.Request) *failure {
	key := presentedKey(dialect, r)
	ok := slices.Contains(s.keys, key)
	switch dialect {
	case Anthropic:
		switch {
		case key == "":
			return &failure{status: http.StatusUnauthorized, message: anthropicNoKey}
		case !ok:
			return &failure{status: http.StatusUnauthorized, message: anthropicBadKey}
		case r.Header.Get("anthropic-version") == "":
			return &failure{status: http.StatusBadRequest, message: anthropicNoVersion}
		}
	case Gemini:
		switch {
		case key == "":
			return &failure{status: http.StatusForbidden, message: geminiNoKey}
		case !ok:
			return &failure{status: http.StatusBadRequest, message: geminiBadKey, code: geminiAPIKeyInvalid}
		}
	default:
		switch {
		case key == "":
			return &failure{status: http.StatusUnauthorized, message: openAINoKey, kind: "invalid_request_error"}
		case !ok:
			return &failure{status: http.StatusUnauthorized, message: fmt.Sprintf(openAIBadKey, maskKey(key)),
				kind: "invalid_request_error", code: "invalid_api_key"}
		}
	}
	return nil
}

// maskKey hides a key as OpenAI's error message does.
func maskKey(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

func notFound(dialect string, r *http.Request) *failure {
	if dialect == Gemini {
		return &failure{status: http.StatusNotFound, message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)}
	}
	return &failure{status: http.StatusNotFound, message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), kind: "invalid_request_error"}
}

func badBody(dialect string, err error) *failure {
	switch dialect {
	case Anthropic:
		return &failure{status: http.StatusBadRequest, message: "There was an error parsing the body of your request: " + err.Error()}
	case Gemini:
		return &failure{status: http.StatusBadRequest, message: "Invalid JSON payload received. " + err.Error()}
	}
	return &failure{status: http.StatusBadRequest, kind: "invalid_request_error",
		message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
}

// validate refuses bodies that lack what the real API requires, which is
// where a broken conversion shows first.
func validate(x *exchange) *failure {
	var missing string
	p := x.r.URL.Path
	switch {
	case p == "/v1/chat/completions" && x.body.Model == "":
		return &failure{status: http.StatusBadRequest, message: "you must provide a model parameter", kind: "invalid_request_error"}
	case p == "/v1/chat/completions" && len(x.body.Messages) == 0:
		missing = "messages"
	case p == "/v1/embeddings" && len(x.body.Input) == 0:
		missing = "input"
	case p == "/v1/audio/transcriptions" && (x.form == nil || len(x.form.File["file"]) == 0):
		missing = "file"
	case p == "/v1/messages/count_tokens":
		// Like /v1/messages, without max_tokens.
		for _, f := range []struct {
			name    string
			present bool
		}{{"model", x.body.Model != ""}, {"messages", len(x.body.Messages) > 0}} {
			if !f.present {
				return &failure{status: http.StatusBadRequest, message: f.name + ": Field required"}
			}
		}
	case p == "/v1/messages":
		for _, f := range []struct {
			name    string
			present bool
		}{{"model", x.body.Model != ""}, {"max_tokens", len(x.body.MaxTokens) > 0}, {"messages", len(x.body.Messages) > 0}} {
			if !f.present {
				return &failure{status: http.StatusBadRequest, message: f.name + ": Field required"}
			}
		}
	case x.dialect == Gemini && x.r.Method == http.MethodPost && !geminiMethod(x.r.PathValue("call")):
		return notFound(Gemini, x.r)
	case x.dialect == Gemini && x.r.Method == http.MethodPost && len(x.body.Contents) == 0:
		return &failure{status: http.StatusBadRequest, message: "* GenerateContentRequest.contents: contents is not specified\n"}
	}
	if missing != "" {
		return &failure{status: http.StatusBadRequest, message: fmt.Sprintf("'%s' is a required property", missing), kind: "invalid_request_error"}
	}
	return nil
}

// geminiMethod reports whether call ("{model}:{method}") names a method
// the server implements.
func geminiMethod(call string) bool {
	_, method, _ := strings.Cut(call, ":")
	return method == "generateContent" || method == "streamGenerateContent"
}

// statusFailure is the dialect's usual answer for status (Behavior.Status).
func statusFailure(x *exchange, status int) failure {
	f := failure{status: status}
	switch x.dialect {
	case Anthropic:
		f.message = map[int]string{
			400: "Invalid request", 401: anthropicBadKey,
			403: "Your API key does not have permission to use the specified resource.",
			404: "model: " + x.model, 429: "Number of request tokens has exceeded your per-minute rate limit",
			500: "Internal server error", 529: "Overloaded",
		}[status]
	case Gemini:
		f.message = map[int]string{
			400: "Request contains an invalid argument.",
			401: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
			403: "The caller does not have permission",
			404: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent.", x.model),
			429: "Resource has been exhausted (e.g. check quota).",
			500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
			503: "The model is overloaded. Please try again later.",
		}[status]
	default:
		switch status {
		case 401:
			f.message, f.kind, f.code = fmt.Sprintf(openAIBadKey, maskKey(presentedKey(OpenAI, x.r))), "invalid_request_error", "invalid_api_key"
		case 404:
			f.message, f.kind, f.code = fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", x.model), "invalid_request_error", "model_not_found"
		case 429:
			f.message, f.kind, f.code = fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", x.model), "requests", "rate_limit_exceeded"
		case 500:
			f.message = "The server had an error while processing your request. Sorry about that!"
		case 503:
			f.message = "The engine is currently overloaded, please try again later"
		}
	}
	if f.message == "" {
		f.message = fmt.Sprintf("fake upstream error %d", status)
	}
	return f
}

// writeFailure writes f in the dialect's error shape.
func writeFailure(w http.ResponseWriter, dialect string, f failure) {
	var body obj
	switch dialect {
	case Anthropic:
		kind := f.kind
		if kind == "" {
			kind = anthropicErrorType(f.status)
		}
		body = obj{"type": "error", "error": obj{"type": kind, "message": f.message}, "request_id": "req_fake"}
	case Gemini:
		detail := obj{"code": f.status, "message": f.message, "status": geminiStatus(f.status)}
		if f.code != "" {
			detail["details"] = []any{obj{
				"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
				"reason":   f.code,
				"domain":   "googleapis.com",
				"metadata": obj{"service": "generativelanguage.googleapis.com"},
			}}
		}
		body = obj{"error": detail}
	default:
		kind := f.kind
		if kind == "" {
			kind = "invalid_request_error"
			if f.status >= 500 {
				kind = "server_error"
			}
		}
		var code any
		if f.code != "" {
			code = f.code
		}
		body = obj{"error": obj{"message": f.message, "type": kind, "param": nil, "code": code}}
	}
	_ = writeJSON(w, f.status, body)
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func geminiStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}
