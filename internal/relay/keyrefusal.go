package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// maxRefusalBody bounds what is read of a 400/403 answer to decide whether
// it refused the channel's key: the error envelopes are small.
const maxRefusalBody = 64 << 10

// openAIKeyCodes are the OpenAI error codes that say the key or its account
// cannot be used by anyone (docs/decisions/channels.md).
var openAIKeyCodes = map[string]bool{
	"invalid_api_key":          true,
	"account_deactivated":      true,
	"organization_deactivated": true,
}

// geminiKeyReasons are the ErrorInfo reasons with which Google refuses a
// key, or the project behind it, for every request.
var geminiKeyReasons = map[string]bool{
	"API_KEY_INVALID":               true,
	"API_KEY_SERVICE_BLOCKED":       true,
	"API_KEY_IP_ADDRESS_BLOCKED":    true,
	"API_KEY_HTTP_REFERRER_BLOCKED": true,
	"SERVICE_DISABLED":              true,
	"CONSUMER_SUSPENDED":            true,
}

// keyRefused reports whether an upstream answer means the channel's key (or
// its account) is unusable for everyone, so the channel must be disabled.
// A 401 always does. A 403 (and Gemini's 400) does only with the provider's
// invalid-key or account code in its error body; any other 403 — a content
// refusal, a model the key may not use — concerns this request only.
func keyRefused(d dialect, status int, body []byte) bool {
	if status == http.StatusUnauthorized {
		return true
	}
	if status != http.StatusForbidden && !(status == http.StatusBadRequest && d == dialectGemini) {
		return false
	}
	e, ok := parseErrorBody(body)
	if !ok {
		return false
	}
	switch d {
	case dialectGemini:
		for _, detail := range e.Error.Details {
			if geminiKeyReasons[detail.Reason] {
				return true
			}
		}
		return false
	case dialectAnthropic:
		// permission_error is per resource (a model, a feature); only an
		// authentication_error condemns the key.
		return e.Error.Type == "authentication_error"
	}
	code, _ := e.Error.Code.(string)
	return openAIKeyCodes[code]
}

// errorBody covers the error envelopes of the three dialects: OpenAI's
// {"error":{"type","code"}}, Anthropic's {"type":"error","error":{"type"}}
// and Google's {"error":{"code":403,"status","details":[{"reason"}]}}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Code    any    `json:"code"` // OpenAI: a string or null; Google: a number
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// parseErrorBody decodes an error envelope; Google sometimes wraps it in an
// array.
func parseErrorBody(body []byte) (errorBody, bool) {
	body = bytes.TrimSpace(body)
	var e errorBody
	if len(body) > 0 && body[0] == '[' {
		var list []errorBody
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return e, false
		}
		return list[0], true
	}
	return e, json.Unmarshal(body, &e) == nil
}
