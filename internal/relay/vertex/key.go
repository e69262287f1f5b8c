package vertex

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// DefaultTokenURI is Google's token endpoint, for a key that names none.
const DefaultTokenURI = "https://oauth2.googleapis.com/token"

// ServiceAccount is the part of a Google service-account JSON key the
// gateway uses.
type ServiceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// String names the account without its private key, so a logged value
// leaks nothing.
func (sa *ServiceAccount) String() string {
	return sa.ClientEmail + " (key " + sa.PrivateKeyID + ")"
}

// ParseKey reads a channel key as Google issues a service-account key: one
// JSON object, usually pasted over many lines. It must be of type
// service_account with a project, a client email and an RSA private key in
// PEM; token_uri defaults to Google's.
func ParseKey(key string) (*ServiceAccount, error) {
	raw := strings.TrimSpace(key)
	if !utf8.ValidString(raw) {
		return nil, errors.New("vertex key: not valid UTF-8")
	}
	if !strings.HasPrefix(raw, "{") {
		return nil, errors.New("vertex key: want the service account's JSON key as Google issues it")
	}
	var sa ServiceAccount
	if err := json.Unmarshal([]byte(raw), &sa); err != nil {
		return nil, fmt.Errorf("vertex key: not a JSON object: %w", err)
	}
	if sa.Type != "service_account" {
		return nil, fmt.Errorf("vertex key: type %q, want service_account", sa.Type)
	}
	if sa.ProjectID == "" || sa.ClientEmail == "" || sa.PrivateKey == "" {
		return nil, errors.New("vertex key: project_id, client_email and private_key are required")
	}
	if strings.ContainsAny(sa.ProjectID, "/?#% \x00") {
		return nil, fmt.Errorf("vertex key: project_id %q is not a project id", sa.ProjectID)
	}
	if _, err := sa.rsaKey(); err != nil {
		return nil, err
	}
	if sa.TokenURI == "" {
		sa.TokenURI = DefaultTokenURI
	}
	u, err := url.Parse(sa.TokenURI)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("vertex key: token_uri %q is not an http(s) URL", sa.TokenURI)
	}
	return &sa, nil
}

// rsaKey decodes the PEM private key (PKCS#8, as Google issues it, or
// PKCS#1).
func (sa *ServiceAccount) rsaKey() (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return nil, errors.New("vertex key: private_key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return rk, nil
		}
		return nil, errors.New("vertex key: private_key is not an RSA key")
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("vertex key: private_key is not a PKCS#8 or PKCS#1 RSA key")
	}
	return k, nil
}
