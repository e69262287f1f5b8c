package relay

import (
	"testing"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

func TestKeyRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		d      dialect.Dialect
		status int
		body   string
		want   bool
	}{
		{"401 without a body", openai.Dialect{}, 401, "", true},
		{"401 in any dialect", gemini.Dialect{}, 401, "<html>", true},
		{"openai 403 invalid_api_key", openai.Dialect{}, 403, `{"error":{"code":"invalid_api_key"}}`, true},
		{"openai 403 account_deactivated", openai.Dialect{}, 403, `{"error":{"code":"account_deactivated"}}`, true},
		{"openai 403 organization_deactivated", openai.Dialect{}, 403, `{"error":{"code":"organization_deactivated"}}`, true},
		{"openai 403 content refusal", openai.Dialect{}, 403, `{"error":{"message":"flagged","type":"invalid_request_error","code":null}}`, false},
		{"openai 403 region", openai.Dialect{}, 403, `{"error":{"code":"unsupported_country_region_territory"}}`, false},
		{"openai 403 not json", openai.Dialect{}, 403, `<html>Forbidden</html>`, false},
		{"openai 403 empty", openai.Dialect{}, 403, ``, false},
		{"openai 400 invalid_api_key is not a key refusal", openai.Dialect{}, 400, `{"error":{"code":"invalid_api_key"}}`, false},
		{"anthropic 403 authentication_error", anthropic.Dialect{}, 403, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, true},
		{"anthropic 403 permission_error", anthropic.Dialect{}, 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, false},
		{"gemini 400 API_KEY_INVALID", gemini.Dialect{}, 400, `{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}`, true},
		{"gemini 400 wrapped in an array", gemini.Dialect{}, 400, `[{"error":{"code":400,"details":[{"reason":"API_KEY_INVALID"}]}}]`, true},
		{"gemini 400 other", gemini.Dialect{}, 400, `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, false},
		{"gemini 403 service blocked", gemini.Dialect{}, 403, `{"error":{"code":403,"details":[{"reason":"API_KEY_SERVICE_BLOCKED"}]}}`, true},
		{"gemini 403 service disabled", gemini.Dialect{}, 403, `{"error":{"code":403,"details":[{"@type":"x"},{"reason":"SERVICE_DISABLED"}]}}`, true},
		{"gemini 403 no reason", gemini.Dialect{}, 403, `{"error":{"code":403,"status":"PERMISSION_DENIED"}}`, false},
		{"429 never", openai.Dialect{}, 429, `{"error":{"code":"invalid_api_key"}}`, false},
	}
	for _, tc := range tests {
		if got := keyRefused(tc.d, tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: keyRefused = %v, want %v", tc.name, got, tc.want)
		}
	}
}
