package payment

import (
	"fmt"
	"io"
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
