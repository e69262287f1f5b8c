package vertex

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// keyReasons are the ErrorInfo reasons with which Google refuses the
// service account or its project for every request.
var keyReasons = map[string]bool{
	"IAM_PERMISSION_DENIED":         true,
	"SERVICE_DISABLED":              true,
	"CONSUMER_SUSPENDED":            true,
	"BILLING_DISABLED":              true,
	"ACCESS_TOKEN_EXPIRED":          true,
	"ACCOUNT_STATE_INVALID":         true,
	"CREDENTIALS_MISSING":           true,
	"ACCESS_TOKEN_TYPE_UNSUPPORTED": true,
}

// Classify says what a Vertex error answer means. 401 (UNAUTHENTICATED) is
// the key — the token is refreshed before it expires, so a refused token
// means the account is gone; a 403 only with an account-wide reason (a
// missing IAM role, the API or billing disabled); 429 RESOURCE_EXHAUSTED
// throttles. Claude's errors on Vertex come in Anthropic's shape and are
// read by their type.
func Classify(status int, body []byte) *refusal.Error {
	var b struct {
		Type  string `json:"type"` // Anthropic: "error"
		Error struct {
			Status  string `json:"status"`
			Type    string `json:"type"` // Anthropic
			Message string `json:"message"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") { // Google sometimes wraps the envelope in an array
		trimmed = strings.TrimSuffix(strings.TrimPrefix(trimmed, "["), "]")
	}
	_ = json.Unmarshal([]byte(trimmed), &b)
	code := b.Error.Status
	if code == "" {
		code = b.Error.Type
	}
	e := &refusal.Error{Status: status, Code: code, Message: b.Error.Message}
	keyReason := false
	for _, d := range b.Error.Details {
		keyReason = keyReason || keyReasons[d.Reason]
	}
	switch {
	case status == http.StatusUnauthorized || b.Error.Type == "authentication_error":
		e.Kind = refusal.Key
	case status == http.StatusForbidden && keyReason:
		e.Kind = refusal.Key
	case status == http.StatusTooManyRequests || b.Error.Type == "rate_limit_error":
		e.Kind = refusal.Throttled
	case status >= 500 || b.Error.Type == "overloaded_error":
		e.Kind = refusal.Upstream
	default:
		e.Kind = refusal.Request
	}
	return e
}
