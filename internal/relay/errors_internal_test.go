package relay

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/dialect"
)

// TestWriteErrorShapes pins the shape of every error the relay writes,
// in both dialects, including those hard to provoke over HTTP (a full
// body budget, a body read timeout, a panic).
func TestWriteErrorShapes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name               string
		err                error
		status             int
		typ, code, antType string
	}{
		{"busy", errf(http.StatusTooManyRequests, "server_error", "server_busy", MsgServerBusy), 429, "server_error", "server_busy", "rate_limit_error"},
		{"body timeout", errf(http.StatusRequestTimeout, "invalid_request_error", "request_timeout", MsgBodyTimeout), 408, "invalid_request_error", "request_timeout", "invalid_request_error"},
		{"too large", errf(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", MsgBodyTooLarge), 413, "invalid_request_error", "request_too_large", "request_too_large"},
		{"quota", quotaExceeded(MsgUserQuota), 429, "insufficient_quota", "insufficient_quota", "billing_error"},
		{"not offered", modelNotFound(msgNoPriceFmt, "m"), 404, "invalid_request_error", "model_not_found", "not_found_error"},
		{"unsupported", unsupportedEndpoint(msgUnsupportedFmt, "g", "m", "/v1/embeddings"), 400, "invalid_request_error", "unsupported_endpoint", "invalid_request_error"},
		{"method", errf(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", msgMethodFmt, "GET", "/v1/messages", "POST"), 405, "invalid_request_error", "method_not_allowed", "invalid_request_error"},
		{"key", unauthorized(MsgInvalidKey), 401, "invalid_request_error", "invalid_api_key", "authentication_error"},
		{"spec 403", forbidden(MsgPinNotAllowed, "channel_pin_not_allowed"), 403, "permission_error", "channel_pin_not_allowed", "permission_error"},
		{"upstream", (&upstreamFailure{status: 500}).clientError(), 502, "upstream_error", "upstream_error", "api_error"},
		{"internal", errors.New("secret detail"), 500, "server_error", "internal_error", "api_error"},
	} {
		w := httptest.NewRecorder()
		writeError(w, dialect.OpenAI, tt.err)
		var o struct {
			Error struct{ Message, Type, Code string }
		}
		if json.Unmarshal(w.Body.Bytes(), &o) != nil || w.Code != tt.status || o.Error.Type != tt.typ || o.Error.Code != tt.code || o.Error.Message == "" {
			t.Errorf("%s, OpenAI: %d %s", tt.name, w.Code, w.Body)
		}
		w = httptest.NewRecorder()
		writeError(w, dialect.Anthropic, tt.err)
		var a struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(w.Body.Bytes(), &a) != nil || w.Code != tt.status || a.Type != "error" || a.Error.Type != tt.antType || a.Error.Message == "" {
			t.Errorf("%s, Anthropic: %d %s", tt.name, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "secret") {
			t.Errorf("internal error text leaked: %s", w.Body)
		}
	}
}
