package vertex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
	"golang.org/x/sync/singleflight"

	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// Scope is the OAuth2 scope Vertex AI calls need.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// RefreshBefore is how long before its expiry a token is replaced, so a
// request never leaves with a token that dies on the way.
const RefreshBefore = 5 * time.Minute

// grantTimeout bounds one token grant; x/oauth2's JWT flow posts without
// the caller's context, so the HTTP client's timeout is what ends it.
const grantTimeout = 30 * time.Second

// Grants hands out one TokenSource per service account, so every channel
// (and every request) using one key shares its token. Safe for concurrent
// use.
type Grants struct {
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	sources map[string]*TokenSource
}

// NewGrants makes the registry. client makes the grants (nil: a client
// with a 30 s timeout); now is the clock expiries are measured on (nil:
// time.Now).
func NewGrants(client *http.Client, now func() time.Time) *Grants {
	if client == nil {
		client = &http.Client{Timeout: grantTimeout}
	}
	if now == nil {
		now = time.Now
	}
	return &Grants{client: client, now: now, sources: map[string]*TokenSource{}}
}

// Source returns the token source of a service account; the same key
// always gets the same source.
func (g *Grants) Source(sa *ServiceAccount) *TokenSource {
	h := sha256.Sum256([]byte(sa.ClientEmail + "\x00" + sa.PrivateKeyID + "\x00" + sa.TokenURI + "\x00" + sa.PrivateKey))
	id := hex.EncodeToString(h[:])
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.sources[id]; ok {
		return s
	}
	s := &TokenSource{sa: *sa, client: g.client, now: g.now}
	g.sources[id] = s
	return s
}

// TokenSource gets and caches the access token of one service account by
// the OAuth2 JWT-bearer flow (RFC 7523): an RS256 assertion signed with the
// account's key, posted to its token_uri.
type TokenSource struct {
	sa     ServiceAccount
	client *http.Client
	now    func() time.Time
	flight singleflight.Group

	mu     sync.Mutex
	token  string
	expiry time.Time
}

// Token returns a token valid for at least RefreshBefore more. Concurrent
// callers that find none share one grant. A refused grant is a
// *refusal.Error (Kind Key for an invalid or disabled key).
func (s *TokenSource) Token(ctx context.Context) (string, error) {
	if tok, ok := s.cached(); ok {
		return tok, nil
	}
	ch := s.flight.DoChan("grant", func() (any, error) {
		if tok, ok := s.cached(); ok { // a grant just finished
			return tok, nil
		}
		return s.grant()
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err() // the grant goes on for the others
	}
}

// Invalidate drops the cached token, after Vertex refused it (401), so the
// next call makes a new grant.
func (s *TokenSource) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.expiry = "", time.Time{}
}

func (s *TokenSource) cached() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Before(s.expiry.Add(-RefreshBefore)) {
		return s.token, true
	}
	return "", false
}

func (s *TokenSource) grant() (string, error) {
	started := s.now()
	conf := &jwt.Config{
		Email:        s.sa.ClientEmail,
		PrivateKey:   []byte(s.sa.PrivateKey),
		PrivateKeyID: s.sa.PrivateKeyID,
		Scopes:       []string{Scope},
		TokenURL:     s.sa.TokenURI,
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.client)
	tok, err := conf.TokenSource(ctx).Token()
	if err != nil {
		return "", classifyGrant(err)
	}
	if tok.AccessToken == "" {
		return "", &refusal.Error{Kind: refusal.Upstream, Code: "no_access_token", Message: "token endpoint answered without access_token"}
	}
	// The lifetime is measured from before the grant on our own clock:
	// expires_in counts from the endpoint's answer, so this errs early.
	var lifetime time.Duration
	if secs, ok := tok.Extra("expires_in").(float64); ok && secs > 0 {
		lifetime = time.Duration(secs) * time.Second
	}
	s.mu.Lock()
	s.token, s.expiry = tok.AccessToken, started.Add(lifetime)
	s.mu.Unlock()
	return tok.AccessToken, nil
}

// classifyGrant turns a failed grant into a refusal: the token endpoint's
// invalid_grant (unknown or deleted key, bad signature), invalid_client
// and unauthorized_client condemn the key; 429 throttles; the rest is the
// endpoint's failure.
func classifyGrant(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return &refusal.Error{Kind: refusal.Upstream, Code: "token_grant", Message: err.Error()}
	}
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(re.Body, &body)
	e := &refusal.Error{Status: re.Response.StatusCode, Code: body.Error, Message: body.Description}
	switch {
	case body.Error == "invalid_grant" || body.Error == "invalid_client" || body.Error == "unauthorized_client" ||
		re.Response.StatusCode == http.StatusUnauthorized:
		e.Kind = refusal.Key
	case re.Response.StatusCode == http.StatusTooManyRequests:
		e.Kind = refusal.Throttled
	case re.Response.StatusCode >= 500:
		e.Kind = refusal.Upstream
	default:
		e.Kind = refusal.Key // any other refusal of a well-formed grant is about the key
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("token endpoint answered %d", e.Status)
	}
	return e
}
