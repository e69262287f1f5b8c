package fakecloud_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

var creds = fakecloud.AWSCredentials{AccessKeyID: "AKIAFAKEFAKEFAKE0009", SecretAccessKey: "s3cr3t", SessionToken: "tok"}

// signed makes a request signed by the AWS SDK, then lets edit change it.
func signed(t *testing.T, url string, body string, edit func(*http.Request)) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Custom", "a   b")
	sum := sha256.Sum256([]byte(body))
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken},
		req, hex.EncodeToString(sum[:]), "bedrock", "ap-northeast-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// The fake's own SigV4 check agrees with the AWS SDK on what it signs —
// query strings, escaped paths, multiple spaces in headers — and refuses
// any change to a signed part.
func TestBedrockSigV4AgreesWithTheSDK(t *testing.T) {
	backend := fakeupstream.New(t)
	b := fakecloud.NewBedrock(t, backend, fakeupstream.DefaultKey, creds, "ap-northeast-1")
	// An unknown operation answers 404 only after the signature passed.
	target := b.URL + "/model/a%3Ab%2Fc/other?x=1&a=b%20c"
	if got := signed(t, target, `{}`, nil); got != 404 {
		t.Fatalf("SDK-signed request: %d, want 404 (signature accepted)", got)
	}
	for name, edit := range map[string]func(*http.Request){
		"query changed":  func(r *http.Request) { r.URL.RawQuery = "x=2&a=b%20c" },
		"path changed":   func(r *http.Request) { r.URL.RawPath = "/model/a%3Ab%2Fd/other"; r.URL.Path = "/model/a:b/d/other" },
		"header changed": func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") },
		"token dropped":  func(r *http.Request) { r.Header.Del("X-Amz-Security-Token") },
		"date moved": func(r *http.Request) {
			r.Header.Set("X-Amz-Date", time.Now().Add(time.Minute).UTC().Format("20060102T150405Z"))
		},
		"body changed":     func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(`{ }`)); r.ContentLength = 3 },
		"no authorization": func(r *http.Request) { r.Header.Del("Authorization") },
	} {
		if got := signed(t, target, `{}`, edit); got != 403 {
			t.Errorf("%s: %d, want 403", name, got)
		}
	}
}

func grant(t *testing.T, tokenURL string, assertion string) (int, string) {
	t.Helper()
	resp, err := http.PostForm(tokenURL, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&b)
	return resp.StatusCode, b.Error
}

// claimSet is a JWT-bearer assertion's claims (RFC 7523).
type claimSet struct {
	Iss   string `json:"iss"`
	Scope string `json:"scope"`
	Aud   string `json:"aud"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

func TestGoogleTokensVerifyTheAssertion(t *testing.T) {
	g := fakecloud.NewGoogleTokens(t)
	key := g.NewServiceAccount(t, "svc", "p")
	var k struct {
		PrivateKey string `json:"private_key"`
	}
	_ = json.Unmarshal([]byte(key.JSON), &k)
	block, _ := pem.Decode([]byte(k.PrivateKey))
	pk, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	other := g.NewServiceAccount(t, "other", "p")
	now := time.Now().Unix()
	claims := func(edit func(*claimSet)) *claimSet {
		c := &claimSet{Iss: key.Email, Scope: "https://www.googleapis.com/auth/cloud-platform", Aud: g.URL, Iat: now, Exp: now + 3600}
		if edit != nil {
			edit(c)
		}
		return c
	}
	sign := func(c *claimSet, kid string) string {
		h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
		p, _ := json.Marshal(c)
		signing := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p)
		sum := sha256.Sum256([]byte(signing))
		sig, err := rsa.SignPKCS1v15(nil, pk.(*rsa.PrivateKey), crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	if status, _ := grant(t, g.URL, sign(claims(nil), key.KeyID)); status != 200 {
		t.Fatalf("good assertion: %d", status)
	}
	for name, assertion := range map[string]string{
		"other account's kid": sign(claims(nil), other.KeyID),
		"claims another iss":  sign(claims(func(c *claimSet) { c.Iss = other.Email }), other.KeyID),
		"wrong audience":      sign(claims(func(c *claimSet) { c.Aud = "https://oauth2.googleapis.com/token" }), key.KeyID),
		"wrong scope":         sign(claims(func(c *claimSet) { c.Scope = "https://www.googleapis.com/auth/drive" }), key.KeyID),
		"expired":             sign(claims(func(c *claimSet) { c.Iat, c.Exp = now-7200, now-3600 }), key.KeyID),
		"too long-lived":      sign(claims(func(c *claimSet) { c.Exp = now + 7200 }), key.KeyID),
		"garbage":             "a.b.c",
	} {
		if status, _ := grant(t, g.URL, assertion); status != 400 {
			t.Errorf("%s: %d, want 400", name, status)
		}
	}
	if all, _ := g.Grants(""); all != 1 {
		t.Fatalf("%d grants, want 1", all)
	}
}

func TestAzureRefusesAuthorizationHeader(t *testing.T) {
	backend := fakeupstream.New(t)
	a := fakecloud.NewAzure(t, backend, fakeupstream.DefaultKey, "k", "d")
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/openai/deployments/d/chat/completions?api-version=2024-10-21",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("api-key", "k")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("%d, want 401", resp.StatusCode)
	}
}

// The Converse fake refuses what Bedrock's schema refuses, so a conversion
// that puts a field in the wrong place fails its test.
func TestConverseSchemaIsStrict(t *testing.T) {
	backend := fakeupstream.New(t)
	b := fakecloud.NewBedrock(t, backend, fakeupstream.DefaultKey, creds, "ap-northeast-1")
	target := b.URL + "/model/amazon.nova-pro-v1%3A0/converse"
	user := `{"role":"user","content":[{"text":"hi"}]}`
	if got := signed(t, target, `{"messages":[`+user+`],"inferenceConfig":{"maxTokens":5}}`, nil); got != 200 {
		t.Fatalf("valid body: %d", got)
	}
	for name, body := range map[string]string{
		"OpenAI field at the top": `{"messages":[` + user + `],"max_tokens":5}`,
		"OpenAI name in config":   `{"messages":[` + user + `],"inferenceConfig":{"max_tokens":5}}`,
		"string content":          `{"messages":[{"role":"user","content":"hi"}]}`,
		"two user turns":          `{"messages":[` + user + `,` + user + `]}`,
		"assistant first":         `{"messages":[{"role":"assistant","content":[{"text":"x"}]}]}`,
		"toolUse without tools":   `{"messages":[` + user + `,{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"f","input":{}}}]}]}`,
		"unknown block":           `{"messages":[{"role":"user","content":[{"image_url":"x"}]}]}`,
		"system as a string":      `{"messages":[` + user + `],"system":"be brief"}`,
	} {
		if got := signed(t, target, body, nil); got != 400 {
			t.Errorf("%s: %d, want 400", name, got)
		}
	}
	if backend.Count() != 1 {
		t.Fatalf("backend saw %d calls, want 1", backend.Count())
	}
}
