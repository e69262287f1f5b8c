package channel

import (
	"context"
	"net/http"
)

// anthropicVersion is the API version header Anthropic requires on every call.
const anthropicVersion = "2023-06-01"

// NewProbeRequest builds the request that checks a channel's upstream is
// reachable: the provider's model list, authenticated the provider's way.
// The key travels only in a header, never in the URL, so transport errors
// (which quote the URL) cannot reveal it. An empty key sends no credential.
func NewProbeRequest(ctx context.Context, typ int, baseURL, key string) (*http.Request, error) {
	path, header, value := "/v1/models", "Authorization", "Bearer "+key
	switch typ {
	case TypeAnthropic:
		header, value = "x-api-key", key
	case TypeGemini:
		path, header, value = "/v1beta/models", "x-goog-api-key", key
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+path, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set(header, value)
	}
	if typ == TypeAnthropic {
		req.Header.Set("anthropic-version", anthropicVersion)
	}
	return req, nil
}
