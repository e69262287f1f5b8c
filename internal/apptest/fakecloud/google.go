package fakecloud

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GoogleTokens is a fake Google OAuth2 token endpoint (POST /token) for
// service accounts it created. It takes the JWT-bearer grant
// (RFC 7523) as Google does: the assertion's RS256 signature is verified
// against the account's public key (found by "iss" and the header's
// "kid"), its audience must be this token URL, its scope cloud-platform,
// its times current and at most an hour apart. It answers
// invalid_grant otherwise, and counts the grants it made.
type GoogleTokens struct {
	// URL is the token endpoint, the keys' token_uri.
	URL string

	mu       sync.Mutex
	now      func() time.Time
	lifetime time.Duration
	accounts map[string]*googleAccount // by client_email
	tokens   map[string]issuedToken
	grants   int
	seq      int
}

type googleAccount struct {
	email, keyID, project string
	public                *rsa.PublicKey
	disabled              bool
	grants                int
}

type issuedToken struct {
	email   string
	expires time.Time
}

// NewGoogleTokens starts a token endpoint whose tokens live an hour.
func NewGoogleTokens(t testing.TB) *GoogleTokens {
	t.Helper()
	g := &GoogleTokens{now: time.Now, lifetime: time.Hour, accounts: map[string]*googleAccount{}, tokens: map[string]issuedToken{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", g.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL + "/token"
	return g
}

// SetClock sets the clock token lifetimes are measured on (the assertion's
// own times are checked against the wall clock, as x/oauth2 stamps them).
func (g *GoogleTokens) SetClock(now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = now
}

// SetLifetime sets expires_in of the next tokens.
func (g *GoogleTokens) SetLifetime(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lifetime = d
}

// ServiceAccountKey is a key the fake made: its JSON as Google issues it
// (multi-line), and what identifies it.
type ServiceAccountKey struct {
	JSON, Email, KeyID, Project string
}

// NewServiceAccount generates an RSA key pair for a new account of
// project; the fake keeps the public half, the test gets the JSON key.
func (g *GoogleTokens) NewServiceAccount(t testing.TB, name, project string) ServiceAccountKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.seq++
	keyID := fmt.Sprintf("%040x", g.seq)
	email := name + "@" + project + ".iam.gserviceaccount.com"
	g.accounts[email] = &googleAccount{email: email, keyID: keyID, project: project, public: &priv.PublicKey}
	g.mu.Unlock()
	key := map[string]string{
		"type":                        "service_account",
		"project_id":                  project,
		"private_key_id":              keyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "1234567890",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   g.URL,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}
	b, _ := json.MarshalIndent(key, "", "  ")
	return ServiceAccountKey{JSON: string(b) + "\n", Email: email, KeyID: keyID, Project: project}
}

// Disable makes the account's key refused from now on, as a deleted key
// is.
func (g *GoogleTokens) Disable(email string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a, ok := g.accounts[email]; ok {
		a.disabled = true
	}
}

// Grants returns how many tokens were granted, in all and to one account.
func (g *GoogleTokens) Grants(email string) (all, account int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a, ok := g.accounts[email]; ok {
		account = a.grants
	}
	return g.grants, account
}

// check returns the account of a valid, unexpired token.
func (g *GoogleTokens) check(token string) (*googleAccount, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	it, ok := g.tokens[token]
	if !ok || !g.now().Before(it.expires) {
		return nil, false
	}
	a := g.accounts[it.email]
	return a, a != nil && !a.disabled
}

func grantError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}

func (g *GoogleTokens) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		grantError(w, "invalid_request", "bad form")
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		grantError(w, "unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		grantError(w, "invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.")
		return
	}
	var header struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		grantError(w, "invalid_grant", "Invalid JWT: malformed")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.accounts[claims.Iss]
	if !ok || a.disabled || header.Kid != a.keyID {
		grantError(w, "invalid_grant", "Invalid grant: account not found")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || header.Alg != "RS256" || rsa.VerifyPKCS1v15(a.public, crypto.SHA256, sum[:], sig) != nil {
		grantError(w, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	if claims.Aud != g.URL {
		grantError(w, "invalid_grant", "Invalid JWT: audience mismatch")
		return
	}
	if !strings.Contains(" "+claims.Scope+" ", " https://www.googleapis.com/auth/cloud-platform ") {
		grantError(w, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
		return
	}
	wall := time.Now().Unix()
	if claims.Iat > wall+300 || claims.Exp <= wall || claims.Exp-claims.Iat > 3600 {
		grantError(w, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
		return
	}
	g.grants++
	a.grants++
	token := fmt.Sprintf("ya29.fake-%d-%s", g.grants, a.keyID[len(a.keyID)-6:])
	g.tokens[token] = issuedToken{email: a.email, expires: g.now().Add(g.lifetime)}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "expires_in": int(g.lifetime / time.Second), "token_type": "Bearer"})
}

func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
