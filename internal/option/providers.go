package option

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// Sign-in providers (issue 31 §2), with one-api's names.
const (
	OidcEnabled      = "OidcEnabled"
	OidcClientID     = "OidcClientId"
	OidcClientSecret = "OidcClientSecret"
	// OidcWellKnown is the full discovery URL; the issuer is what the
	// document says.
	OidcWellKnown = "OidcWellKnown"
	// The endpoints used when there is no discovery document.
	OidcAuthorizationEndpoint = "OidcAuthorizationEndpoint"
	OidcTokenEndpoint         = "OidcTokenEndpoint"
	OidcUserinfoEndpoint      = "OidcUserinfoEndpoint"

	GitHubOAuthEnabled = "GitHubOAuthEnabled"
	GitHubClientID     = "GitHubClientId"
	GitHubClientSecret = "GitHubClientSecret"
)

// OIDC is the generic OpenID Connect provider's settings.
type OIDC struct {
	Enabled                bool
	ClientID, ClientSecret string
	WellKnown              string
	AuthorizationEndpoint  string
	TokenEndpoint          string
	UserinfoEndpoint       string
}

// GitHub is the GitHub OAuth app's settings.
type GitHub struct {
	Enabled                bool
	ClientID, ClientSecret string
}

// MsgProviderURL refuses a provider URL that is neither https nor http to
// a loopback address.
const MsgProviderURL = "必须是 https:// 网址(本机地址可用 http://)"

// providerURL accepts https, or http to a loopback host (a provider on the
// same machine, or a test's fake).
func providerURL(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return "", errors.New(MsgProviderURL)
	}
	switch u.Scheme {
	case "https":
		return v, nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return v, nil
		}
	}
	return "", errors.New(MsgProviderURL)
}

func init() {
	text := func(set func(s *Snapshot, v string)) func(s *Snapshot, v string) error {
		return func(s *Snapshot, v string) error {
			if err := plainText(v, 1024); err != nil {
				return err
			}
			set(s, strings.TrimSpace(v))
			return nil
		}
	}
	endpoint := func(set func(s *Snapshot, v string)) func(s *Snapshot, v string) error {
		return func(s *Snapshot, v string) error {
			u, err := providerURL(v)
			set(s, u)
			return err
		}
	}
	for k, d := range map[string]definition{
		OidcEnabled: {"false", func(s *Snapshot, v string) (err error) {
			s.OIDC.Enabled, err = parseBool(v)
			return err
		}},
		OidcClientID:              {"", text(func(s *Snapshot, v string) { s.OIDC.ClientID = v })},
		OidcClientSecret:          {"", text(func(s *Snapshot, v string) { s.OIDC.ClientSecret = v })},
		OidcWellKnown:             {"", endpoint(func(s *Snapshot, v string) { s.OIDC.WellKnown = v })},
		OidcAuthorizationEndpoint: {"", endpoint(func(s *Snapshot, v string) { s.OIDC.AuthorizationEndpoint = v })},
		OidcTokenEndpoint:         {"", endpoint(func(s *Snapshot, v string) { s.OIDC.TokenEndpoint = v })},
		OidcUserinfoEndpoint:      {"", endpoint(func(s *Snapshot, v string) { s.OIDC.UserinfoEndpoint = v })},
		GitHubOAuthEnabled: {"false", func(s *Snapshot, v string) (err error) {
			s.GitHub.Enabled, err = parseBool(v)
			return err
		}},
		GitHubClientID:     {"", text(func(s *Snapshot, v string) { s.GitHub.ClientID = v })},
		GitHubClientSecret: {"", text(func(s *Snapshot, v string) { s.GitHub.ClientSecret = v })},
	} {
		definitions[k] = d
	}
}
