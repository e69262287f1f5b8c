package azure

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// keyCodes are the error codes with which Azure refuses a resource key for
// every request (a wrong key answers 401 with code "401"; a disabled or
// deleted resource 403 with these).
var keyCodes = map[string]bool{
	"401":                        true,
	"invalid_api_key":            true,
	"PermissionDenied":           true,
	"AuthenticationTypeDisabled": true,
}

// Classify says what an Azure error answer means. 401 is always the key;
// 403 only with a key code (a content filter or a network rule of one
// request is not); 429 is a throttled key; a missing deployment
// (DeploymentNotFound, 404) or a bad field (400) is the request's fault.
func Classify(status int, body []byte) *refusal.Error {
	code, msg := errorOf(body)
	e := &refusal.Error{Status: status, Code: code, Message: msg}
	switch {
	case status == http.StatusUnauthorized:
		e.Kind = refusal.Key
	case status == http.StatusForbidden && keyCodes[code]:
		e.Kind = refusal.Key
	case status == http.StatusTooManyRequests:
		e.Kind = refusal.Throttled
	case status >= 500:
		e.Kind = refusal.Upstream
	default:
		e.Kind = refusal.Request
	}
	return e
}

// errorOf reads Azure's {"error":{"code","message"}}; the code is a string
// or, on some gateways, a number.
func errorOf(body []byte) (code, message string) {
	var b struct {
		Error struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", strings.TrimSpace(string(body))
	}
	code = strings.Trim(string(b.Error.Code), `"`)
	if code == "null" {
		code = ""
	}
	return code, b.Error.Message
}
