package payment

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// MaxBodyBytes bounds a provider's notification or API answer, which are
// 1–3 KB when genuine.
const MaxBodyBytes = 64 << 10

// ReadBounded reads r whole, refusing more than MaxBodyBytes.
func ReadBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBodyBytes {
		return nil, fmt.Errorf("body is larger than %d bytes", MaxBodyBytes)
	}
	return b, nil
}

// Gateway is a channel's configured API URL without a trailing slash, or
// def when none is configured; it must be an http(s) URL with a host
// (tests point it at a local fake).
func Gateway(method, configured, def string) (string, error) {
	g := strings.TrimRight(configured, "/")
	if g == "" {
		return def, nil
	}
	u, err := url.Parse(g)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%s config: gateway %q is not an http(s) URL", method, configured)
	}
	return g, nil
}

// Post sends body to a provider's API at endpoint through client (nil:
// http.DefaultClient) and answers the bounded body of a 200 answer.
func Post(ctx context.Context, client *http.Client, endpoint, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := ReadBounded(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b, nil
}
