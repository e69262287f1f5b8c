// Package azure speaks to Azure OpenAI (channel type 3, one-api's number):
// it validates a channel's api-version, builds the deployment URLs of each
// endpoint, authenticates with the "api-key" header and classifies Azure's
// error answers. The bodies are OpenAI's, so conversions stay in
// relay/openai; this package only knows where and how to send them.
package azure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/relay/jsonbody"
)

// ChannelType is the channel type of Azure OpenAI, as one-api and new-api
// number it.
const ChannelType = 3

// DefaultAPIVersion is the api-version of a channel whose "other" field is
// empty: the newest generally available dated version.
const DefaultAPIVersion = "2024-10-21"

// V1 is the api-version of Azure's version-less /openai/v1 surface.
const V1 = "v1"

// Endpoint is an OpenAI endpoint an Azure deployment serves.
type Endpoint int

const (
	Chat Endpoint = iota
	Embeddings
	Images
	Responses
)

// suffix is the path of an endpoint under a deployment or under /openai/v1.
var suffix = map[Endpoint]string{
	Chat:       "chat/completions",
	Embeddings: "embeddings",
	Images:     "images/generations",
	Responses:  "responses",
}

var datedVersion = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(-preview)?$`)

// ParseAPIVersion validates a channel's "other" field as an api-version: a
// date such as 2024-10-21, optionally with -preview, or v1. Empty gives
// DefaultAPIVersion.
func ParseAPIVersion(other string) (string, error) {
	v := strings.TrimSpace(other)
	if v == "" {
		return DefaultAPIVersion, nil
	}
	if v == V1 {
		return v, nil
	}
	m := datedVersion.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("azure api-version %q: want a date like 2024-10-21 or 2025-03-01-preview, or v1", other)
	}
	if _, err := time.Parse(time.DateOnly, m[1]); err != nil {
		return "", fmt.Errorf("azure api-version %q: %s is not a date", other, m[1])
	}
	return v, nil
}

// Channel is one Azure OpenAI resource with its key and api-version.
type Channel struct {
	base       string // resource endpoint, no trailing slash
	key        string
	apiVersion string
}

// New validates a channel's fields: base_url is the resource endpoint
// (https://NAME.openai.azure.com), key the resource key, other the
// api-version.
func New(baseURL, key, other string) (*Channel, error) {
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, errors.New("azure key is empty")
	}
	if strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("azure key contains spaces or control characters")
	}
	v, err := ParseAPIVersion(other)
	if err != nil {
		return nil, err
	}
	return &Channel{base: base, key: key, apiVersion: v}, nil
}

func parseBase(baseURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("azure base_url %q: want the resource endpoint, like https://NAME.openai.azure.com", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("azure base_url %q: no query or fragment", baseURL)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// APIVersion returns the channel's api-version.
func (c *Channel) APIVersion() string { return c.apiVersion }

// URL returns where an endpoint of a deployment is called. A dated version
// names the deployment in the path (Responses excepted: it has one URL per
// resource and takes the deployment as "model"); v1 names it in the body.
func (c *Channel) URL(e Endpoint, deployment string) (string, error) {
	s, ok := suffix[e]
	if !ok {
		return "", fmt.Errorf("azure: unknown endpoint %d", e)
	}
	if deployment == "" {
		return "", errors.New("azure: empty deployment name")
	}
	if c.apiVersion == V1 {
		return c.base + "/openai/v1/" + s, nil
	}
	q := "?api-version=" + url.QueryEscape(c.apiVersion)
	if e == Responses {
		return c.base + "/openai/responses" + q, nil
	}
	return c.base + "/openai/deployments/" + url.PathEscape(deployment) + "/" + s + q, nil
}

// ModelInBody reports whether the endpoint's body must name the deployment
// as "model": always on v1, and for Responses on a dated version.
func (c *Channel) ModelInBody(e Endpoint) bool {
	return c.apiVersion == V1 || e == Responses
}

// Body returns the body to send: with "model" set to the deployment where
// Azure reads it there, else the client's bytes unchanged.
func (c *Channel) Body(e Endpoint, deployment string, body []byte) ([]byte, error) {
	if !c.ModelInBody(e) {
		return body, nil
	}
	return jsonbody.Rewrite(body, nil, jsonbody.Member{Name: "model", Value: jsonbody.String(deployment)})
}

// NewRequest builds the POST of an endpoint for a deployment: the URL, the
// body (Body) and the "api-key" header. It never sets Authorization, which
// Azure reads as an Entra ID token.
func (c *Channel) NewRequest(ctx context.Context, e Endpoint, deployment string, body []byte) (*http.Request, error) {
	u, err := c.URL(e, deployment)
	if err != nil {
		return nil, err
	}
	b, err := c.Body(e, deployment, body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("azure request: %w", err)
	}
	req.Header.Set("api-key", c.key)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}
