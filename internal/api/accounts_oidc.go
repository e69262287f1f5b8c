package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/store"
)

// oidcProviders caches the discovered providers by discovery URL: the
// document is read once, and go-oidc's key set fetches the JWKS again when
// a token names a key it does not know (a rotation).
type oidcProviders struct {
	mu  sync.Mutex
	got map[string]*oidc.Provider
}

// provider is the discovered provider of cfg, or nil when cfg names the
// endpoints without discovery.
func (p *oidcProviders) provider(ctx context.Context, cfg option.OIDC) (*oidc.Provider, error) {
	if cfg.WellKnown == "" {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if got := p.got[cfg.WellKnown]; got != nil {
		return got, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.WellKnown, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oidc discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oidc discovery: status %d", resp.StatusCode)
	}
	// The issuer is what the document says (OidcWellKnown is the full
	// URL, which need not be issuer + /.well-known/…); ID tokens must name
	// that issuer.
	var pc oidc.ProviderConfig
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&pc); err != nil {
		return nil, fmt.Errorf("oidc discovery document: %w", err)
	}
	if pc.IssuerURL == "" || pc.JWKSURL == "" || pc.AuthURL == "" || pc.TokenURL == "" {
		return nil, fmt.Errorf("oidc discovery document lacks issuer, jwks_uri or endpoints")
	}
	prov := pc.NewProvider(context.WithoutCancel(ctx))
	if p.got == nil {
		p.got = map[string]*oidc.Provider{}
	}
	p.got[cfg.WellKnown] = prov
	return prov, nil
}

// oidcEndpoints are the authorization and token endpoints: discovered, or
// the options' when there is no discovery.
func oidcEndpoints(cfg option.OIDC, prov *oidc.Provider) oauth2.Endpoint {
	if prov != nil {
		return prov.Endpoint()
	}
	return oauth2.Endpoint{AuthURL: cfg.AuthorizationEndpoint, TokenURL: cfg.TokenEndpoint}
}

func (s *Server) oidcConfig(r *http.Request, cfg option.OIDC, prov *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: oidcEndpoints(cfg, prov),
		RedirectURL: s.siteAddress(r, s.Options.Current()) + "/oauth/oidc",
		Scopes:      []string{oidc.ScopeOpenID, "profile", "email"},
	}
}

// oidcStart serves GET /api/oauth/oidc/start (the console's button): a new
// state, nonce and PKCE verifier in this browser's cookie, and the
// provider's authorization URL as data, where the console sends the browser.
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) error {
	cfg := s.Options.Current().OIDC
	if !cfg.Enabled {
		return httpx.Fail(MsgOAuthDisabled)
	}
	prov, err := s.oidc.provider(r.Context(), cfg)
	if err != nil {
		s.Log.Error("oidc discovery failed", "err", err)
		return httpx.Fail(MsgOAuthFailed)
	}
	if prov == nil && (cfg.AuthorizationEndpoint == "" || cfg.TokenEndpoint == "") {
		return httpx.Fail(MsgOAuthProviderSetup)
	}
	f := oauthFlow{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier()}
	setFlow(w, r, f)
	target := s.oidcConfig(r, cfg, prov).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return httpx.OK(w, target)
}

// oidcCallback serves GET /api/oauth/oidc: exchange the code, verify the
// ID token (signature by the provider's JWKS, issuer, audience, expiry and
// the nonce when the flow has one), and sign in its subject.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) error {
	cfg := s.Options.Current().OIDC
	if !cfg.Enabled {
		return httpx.Fail(MsgOAuthDisabled)
	}
	f, err := takeFlow(w, r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	prov, err := s.oidc.provider(ctx, cfg)
	if err != nil {
		s.Log.Error("oidc discovery failed", "err", err)
		return httpx.Fail(MsgOAuthFailed)
	}
	if prov == nil && (cfg.TokenEndpoint == "" || cfg.UserinfoEndpoint == "") {
		return httpx.Fail(MsgOAuthProviderSetup)
	}
	var opts []oauth2.AuthCodeOption
	if f.Verifier != "" {
		opts = append(opts, oauth2.VerifierOption(f.Verifier))
	}
	tok, err := s.oidcConfig(r, cfg, prov).Exchange(ctx, r.URL.Query().Get("code"), opts...)
	if err != nil {
		s.Log.Warn("oidc code exchange failed", "err", err)
		return httpx.Fail(MsgOAuthFailed)
	}
	id, err := s.oidcIdentity(ctx, cfg, prov, tok, f.Nonce)
	if err != nil {
		s.Log.Warn("oidc sign-in refused", "err", err)
		return httpx.Fail(MsgOAuthFailed)
	}
	return s.signInWith(w, r, id)
}

// oidcClaims are the claims read from the ID token or userinfo.
type oidcClaims struct {
	Subject           string `json:"sub"`
	PreferredUsername string `json:"preferred_username"`
	Name              string `json:"name"`
	Email             string `json:"email"`
	EmailVerified     *bool  `json:"email_verified"`
}

func (c oidcClaims) identity() identity {
	id := identity{Provider: store.ProviderOIDC, Subject: c.Subject, Username: c.PreferredUsername}
	if id.Username == "" {
		id.Username = c.Name
	}
	if c.EmailVerified != nil && *c.EmailVerified {
		id.Email = c.Email
	}
	return id
}

// oidcIdentity is the subject of a verified ID token; without discovery
// (no JWKS to verify with), the userinfo endpoint's answer to the access
// token, over the configured URL.
func (s *Server) oidcIdentity(ctx context.Context, cfg option.OIDC, prov *oidc.Provider, tok *oauth2.Token, nonce string) (identity, error) {
	if prov == nil {
		return s.oidcUserinfo(ctx, cfg.UserinfoEndpoint, tok)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return identity{}, fmt.Errorf("token response has no id_token")
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: s.now}).Verify(ctx, raw)
	if err != nil {
		return identity{}, err
	}
	if nonce != "" && idt.Nonce != nonce {
		return identity{}, fmt.Errorf("id token nonce does not match the flow's")
	}
	var c oidcClaims
	if err := idt.Claims(&c); err != nil {
		return identity{}, err
	}
	if c.PreferredUsername == "" && prov.UserInfoEndpoint() != "" {
		// Some providers put the profile only in userinfo; its subject
		// must be the token's.
		if info, err := prov.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil && info.Subject == idt.Subject {
			var more oidcClaims
			if info.Claims(&more) == nil {
				c.PreferredUsername, c.Name = more.PreferredUsername, more.Name
			}
		}
	}
	return c.identity(), nil
}

func (s *Server) oidcUserinfo(ctx context.Context, endpoint string, tok *oauth2.Token) (identity, error) {
	if _, err := url.Parse(endpoint); err != nil {
		return identity{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return identity{}, err
	}
	tok.SetAuthHeader(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return identity{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return identity{}, fmt.Errorf("userinfo: status %d", resp.StatusCode)
	}
	var c oidcClaims
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&c); err != nil {
		return identity{}, err
	}
	if c.Subject == "" {
		return identity{}, fmt.Errorf("userinfo has no sub")
	}
	return c.identity(), nil
}
