package config

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Traces is the OTLP destination of OpenTelemetry spans (docs/operations.md,
// Traces), read from the standard variables so a collector setup written
// for any OpenTelemetry SDK works unchanged.
type Traces struct {
	// URL is where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as
	// it is, or OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces". Empty: traces
	// are off (also with OTEL_SDK_DISABLED=true or
	// OTEL_TRACES_EXPORTER=none).
	URL string
	// Header is OTEL_EXPORTER_OTLP_(TRACES_)HEADERS: "k=v,k2=v2", values
	// URL-encoded.
	Header http.Header
	// Timeout is OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT in milliseconds
	// (default 10 s).
	Timeout time.Duration
}

// loadTraces reads the OTLP variables; the specific TRACES_ one wins.
func loadTraces(getenv func(string) string, bad func(string, ...any)) Traces {
	get := func(name string) (string, string) {
		specific := "OTEL_EXPORTER_OTLP_TRACES_" + name
		if v := strings.TrimSpace(getenv(specific)); v != "" {
			return v, specific
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	var t Traces
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return t
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		t.URL = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		t.URL = strings.TrimRight(v, "/") + "/v1/traces"
	}
	if t.URL == "" {
		return t
	}
	if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("OTEL_EXPORTER_OTLP_ENDPOINT: %q is not an http:// or https:// URL", t.URL)
	}
	if p, name := get("PROTOCOL"); p != "" && p != "http/json" {
		bad("%s: %q is not supported; modelgate exports traces as OTLP/HTTP JSON (http/json), which OTLP/HTTP receivers accept", name, p)
	}
	if h, name := get("HEADERS"); h != "" {
		t.Header = http.Header{}
		for pair := range strings.SplitSeq(h, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			value, err := url.PathUnescape(strings.TrimSpace(v))
			if !ok || k == "" || err != nil {
				bad("%s: expected key=value pairs separated by commas", name)
				break
			}
			t.Header.Add(k, value)
		}
	}
	t.Timeout = 10 * time.Second
	if v, name := get("TIMEOUT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			bad("%s: %q is not a positive number of milliseconds", name, v)
		} else {
			t.Timeout = time.Duration(n) * time.Millisecond
		}
	}
	return t
}
