// Package vertex speaks to Google Vertex AI (channel type 41, one-api's
// number): it parses a service-account JSON key, gets and caches OAuth2
// access tokens from the key's token_uri by the JWT-bearer flow, builds the
// URLs of Gemini (generateContent) and Claude (rawPredict) models, turns an
// Anthropic Messages body into Vertex's, and classifies Vertex's error
// answers. The bodies are Gemini's and Anthropic's, so conversions stay in
// relay/gemini and relay/anthropic.
package vertex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/jsonbody"
)

// ChannelType is the channel type of Vertex AI, as one-api and new-api
// number it.
const ChannelType = 41

// DefaultRegion is the region of a channel whose "other" field is empty.
const DefaultRegion = "us-central1"

// AnthropicVersion is the anthropic_version Claude on Vertex takes in the
// body.
const AnthropicVersion = "vertex-2023-10-16"

var regionName = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)

// ParseRegion validates a channel's "other" field as a Vertex region
// (us-central1, europe-west4…) or "global"; empty gives DefaultRegion.
func ParseRegion(other string) (string, error) {
	r := strings.TrimSpace(other)
	if r == "" {
		return DefaultRegion, nil
	}
	if r != "global" && !regionName.MatchString(r) {
		return "", fmt.Errorf("vertex region %q: want a region like us-central1 or europe-west4, or global", other)
	}
	return r, nil
}

// DefaultBaseURL is the endpoint of a region: regional hosts, or the
// global one.
func DefaultBaseURL(region string) string {
	if region == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + region + "-aiplatform.googleapis.com"
}

// Channel is a Vertex AI project and region with the token source of its
// service account.
type Channel struct {
	base    string
	region  string
	account *ServiceAccount
	tokens  *TokenSource
}

// New validates a channel's fields — key (a service-account JSON), other
// (the region), base_url (optional; default DefaultBaseURL) — and takes the
// account's token source from grants, shared by every channel of that key.
func New(baseURL, key, other string, grants *Grants) (*Channel, error) {
	sa, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	region, err := ParseRegion(other)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSpace(baseURL)
	if base == "" {
		base = DefaultBaseURL(region)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("vertex base_url %q: want an endpoint like %s", baseURL, DefaultBaseURL(DefaultRegion))
	}
	return &Channel{base: strings.TrimRight(u.String(), "/"), region: region, account: sa, tokens: grants.Source(sa)}, nil
}

// Project returns the project the key belongs to.
func (c *Channel) Project() string { return c.account.ProjectID }

// Region returns the channel's region.
func (c *Channel) Region() string { return c.region }

// Tokens returns the channel's token source (to invalidate a refused token).
func (c *Channel) Tokens() *TokenSource { return c.tokens }

// checkModel refuses names that would change the URL's shape.
func checkModel(model string) error {
	if model == "" || strings.ContainsAny(model, "/:?#%") || strings.ContainsFunc(model, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("vertex: model name %q cannot be part of a URL", model)
	}
	return nil
}

func (c *Channel) modelURL(publisher, model, method string) (string, error) {
	if err := checkModel(model); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/v1/projects/%s/locations/%s/publishers/%s/models/%s:%s",
		c.base, url.PathEscape(c.account.ProjectID), c.region, publisher, url.PathEscape(model), method), nil
}

// GeminiURL returns the URL of a Gemini model: generateContent, or
// streamGenerateContent?alt=sse for server-sent events.
func (c *Channel) GeminiURL(model string, stream bool) (string, error) {
	if stream {
		u, err := c.modelURL("google", model, "streamGenerateContent")
		return u + "?alt=sse", err
	}
	return c.modelURL("google", model, "generateContent")
}

// ClaudeURL returns the URL of a Claude model: rawPredict, or
// streamRawPredict for server-sent events.
func (c *Channel) ClaudeURL(model string, stream bool) (string, error) {
	if stream {
		return c.modelURL("anthropic", model, "streamRawPredict")
	}
	return c.modelURL("anthropic", model, "rawPredict")
}

// ClaudeBody turns an Anthropic Messages API body into Vertex's: without
// "model" (the URL names it), with anthropic_version, and "stream" set to
// match the method. Every other member keeps its bytes.
func ClaudeBody(body []byte, stream bool) ([]byte, error) {
	s := []byte("false")
	if stream {
		s = []byte("true")
	}
	out, err := jsonbody.Rewrite(body, []string{"model"},
		jsonbody.Member{Name: "anthropic_version", Value: jsonbody.String(AnthropicVersion)},
		jsonbody.Member{Name: "stream", Value: s})
	if err != nil {
		return nil, fmt.Errorf("vertex claude body: %w", err)
	}
	return out, nil
}

// NewGeminiRequest builds the POST of a Gemini body to a model.
func (c *Channel) NewGeminiRequest(ctx context.Context, model string, stream bool, body []byte) (*http.Request, error) {
	u, err := c.GeminiURL(model, stream)
	if err != nil {
		return nil, err
	}
	return c.newRequest(ctx, u, body)
}

// NewClaudeRequest builds the POST of an Anthropic Messages body to a
// Claude model (the body is rewritten by ClaudeBody).
func (c *Channel) NewClaudeRequest(ctx context.Context, model string, stream bool, body []byte) (*http.Request, error) {
	u, err := c.ClaudeURL(model, stream)
	if err != nil {
		return nil, err
	}
	b, err := ClaudeBody(body, stream)
	if err != nil {
		return nil, err
	}
	return c.newRequest(ctx, u, b)
}

// newRequest gets a token (a grant at most every ~55 minutes per key) and
// builds the request with it.
func (c *Channel) newRequest(ctx context.Context, u string, body []byte) (*http.Request, error) {
	if body == nil {
		return nil, errors.New("vertex: empty body")
	}
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("vertex request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}
