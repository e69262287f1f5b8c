package relay

import "testing"

func TestKeyRefused(t *testing.T) {
	tests := []struct {
		name   string
		d      dialect
		status int
		body   string
		want   bool
	}{
		{"401 without a body", dialectOpenAI, 401, "", true},
		{"401 in any dialect", dialectGemini, 401, "<html>", true},
		{"openai 403 invalid_api_key", dialectOpenAI, 403, `{"error":{"code":"invalid_api_key"}}`, true},
		{"openai 403 account_deactivated", dialectOpenAI, 403, `{"error":{"code":"account_deactivated"}}`, true},
		{"openai 403 organization_deactivated", dialectOpenAI, 403, `{"error":{"code":"organization_deactivated"}}`, true},
		{"openai 403 content refusal", dialectOpenAI, 403, `{"error":{"message":"flagged","type":"invalid_request_error","code":null}}`, false},
		{"openai 403 region", dialectOpenAI, 403, `{"error":{"code":"unsupported_country_region_territory"}}`, false},
		{"openai 403 not json", dialectOpenAI, 403, `<html>Forbidden</html>`, false},
		{"openai 403 empty", dialectOpenAI, 403, ``, false},
		{"openai 400 invalid_api_key is not a key refusal", dialectOpenAI, 400, `{"error":{"code":"invalid_api_key"}}`, false},
		{"anthropic 403 authentication_error", dialectAnthropic, 403, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, true},
		{"anthropic 403 permission_error", dialectAnthropic, 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, false},
		{"gemini 400 API_KEY_INVALID", dialectGemini, 400, `{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}`, true},
		{"gemini 400 wrapped in an array", dialectGemini, 400, `[{"error":{"code":400,"details":[{"reason":"API_KEY_INVALID"}]}}]`, true},
		{"gemini 400 other", dialectGemini, 400, `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, false},
		{"gemini 403 service blocked", dialectGemini, 403, `{"error":{"code":403,"details":[{"reason":"API_KEY_SERVICE_BLOCKED"}]}}`, true},
		{"gemini 403 service disabled", dialectGemini, 403, `{"error":{"code":403,"details":[{"@type":"x"},{"reason":"SERVICE_DISABLED"}]}}`, true},
		{"gemini 403 no reason", dialectGemini, 403, `{"error":{"code":403,"status":"PERMISSION_DENIED"}}`, false},
		{"429 never", dialectOpenAI, 429, `{"error":{"code":"invalid_api_key"}}`, false},
	}
	for _, tc := range tests {
		if got := keyRefused(tc.d, tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: keyRefused = %v, want %v", tc.name, got, tc.want)
		}
	}
}
