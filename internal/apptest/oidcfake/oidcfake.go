// Package oidcfake is a local OpenID Connect provider for tests: discovery,
// JWKS (an RSA key the test makes), authorize (redirects back with a code),
// token (checks client credentials, redirect URI and PKCE like a real
// provider) and userinfo. ID tokens are RS256 JWTs; a test can spoil them
// (audience, expiry, signature, nonce) to see the gateway refuse them.
package oidcfake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// User is who the provider signs in.
type User struct {
	Subject, PreferredUsername, Email string
	EmailVerified                     bool
}

// Spoil changes the next ID tokens to test refusals.
type Spoil struct {
	Audience  string // a wrong aud
	ExpiredBy time.Duration
	BadSign   bool // signed by another key
	Nonce     string
}

// Provider is a running fake.
type Provider struct {
	URL          string // issuer
	ClientID     string
	ClientSecret string
	// Now is the provider's clock (iat, exp).
	Now func() time.Time

	srv   *httptest.Server
	key   *rsa.PrivateKey
	other *rsa.PrivateKey

	mu    sync.Mutex
	user  User
	spoil Spoil
	codes map[string]grant
	// Tokens counts successful token exchanges.
	Tokens int
}

type grant struct {
	redirectURI, nonce, challenge string
	user                          User
}

// Start runs a provider for t with a client id and secret.
func Start(t testing.TB, clientID, secret string, now func() time.Time) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: clientID, ClientSecret: secret, Now: now, key: key, other: other, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /userinfo", p.userinfo)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// WellKnown is the discovery URL.
func (p *Provider) WellKnown() string { return p.URL + "/.well-known/openid-configuration" }

// SetUser sets who signs in next.
func (p *Provider) SetUser(u User) { p.mu.Lock(); p.user = u; p.mu.Unlock() }

// SetSpoil spoils the next ID tokens (the zero Spoil restores them).
func (p *Provider) SetSpoil(s Spoil) { p.mu.Lock(); p.spoil = s; p.mu.Unlock() }

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{
		"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
		"userinfo_endpoint": p.URL + "/userinfo", "jwks_uri": p.URL + "/jwks",
		"id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"code"},
		"code_challenge_methods_supported": []string{"S256"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	b64 := base64.RawURLEncoding.EncodeToString
	writeJSON(w, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": b64(p.key.N.Bytes()), "e": b64(big.NewInt(int64(p.key.E)).Bytes()),
	}}})
}

// authorize signs the current user in at once and redirects back with a
// code, as a provider does after its login page.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || q.Get("redirect_uri") == "" {
		http.Error(w, "invalid_request", http.StatusBadRequest)
		return
	}
	if c := q.Get("code_challenge"); c != "" && q.Get("code_challenge_method") != "S256" {
		http.Error(w, "invalid_request: S256 only", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.codes[code] = grant{redirectURI: q.Get("redirect_uri"), nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), user: p.user}
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// Grant makes a code for the current user directly (a caller that skips
// the authorize step's browser redirect), with no nonce or PKCE.
func (p *Provider) Grant(redirectURI string) string {
	code := rand.Text()
	p.mu.Lock()
	p.codes[code] = grant{redirectURI: redirectURI, user: p.user}
	p.mu.Unlock()
	return code
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	g, found := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	spoil := p.spoil
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !found || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirectURI:
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "invalid_grant"})
		return
	case g.challenge != "" && base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "invalid_grant", "error_description": "PKCE verifier"})
		return
	}
	now := p.Now()
	claims := map[string]any{
		"iss": p.URL, "sub": g.user.Subject, "aud": p.ClientID, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"preferred_username": g.user.PreferredUsername, "email": g.user.Email, "email_verified": g.user.EmailVerified,
	}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	if spoil.Nonce != "" {
		claims["nonce"] = spoil.Nonce
	}
	if spoil.Audience != "" {
		claims["aud"] = spoil.Audience
	}
	if spoil.ExpiredBy > 0 {
		claims["iat"], claims["exp"] = now.Add(-time.Hour).Unix(), now.Add(-spoil.ExpiredBy).Unix()
	}
	key := p.key
	if spoil.BadSign {
		key = p.other
	}
	p.mu.Lock()
	p.Tokens++
	p.mu.Unlock()
	writeJSON(w, map[string]any{"access_token": "at-" + g.user.Subject, "token_type": "Bearer", "expires_in": 300, "id_token": sign(key, claims)})
}

func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	p.mu.Lock()
	u := p.user
	p.mu.Unlock()
	if auth != "Bearer at-"+u.Subject {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	writeJSON(w, map[string]any{"sub": u.Subject, "preferred_username": u.PreferredUsername, "email": u.Email, "email_verified": u.EmailVerified})
}

// sign makes an RS256 JWT.
func sign(key *rsa.PrivateKey, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
