package vertex_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/refusal"
	"github.com/modelgate/modelgate/internal/relay/vertex"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	clock   *clock
	tokens  *fakecloud.GoogleTokens
	key     fakecloud.ServiceAccountKey
	backend *fakeupstream.Server
	fake    *fakecloud.Vertex
	grants  *vertex.Grants
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	tokens := fakecloud.NewGoogleTokens(t)
	tokens.SetClock(c.Now)
	backend := fakeupstream.New(t)
	return &env{
		clock: c, tokens: tokens, key: tokens.NewServiceAccount(t, "relay", "proj-1"), backend: backend,
		fake:   fakecloud.NewVertex(t, tokens, backend, fakeupstream.DefaultKey, "europe-west4"),
		grants: vertex.NewGrants(nil, c.Now),
	}
}

func (e *env) channel(t *testing.T, key string) *vertex.Channel {
	t.Helper()
	c, err := vertex.New(e.fake.URL, key, "europe-west4", e.grants)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseKey(t *testing.T) {
	tokens := fakecloud.NewGoogleTokens(t)
	good := tokens.NewServiceAccount(t, "a", "my-project")
	if !strings.Contains(good.JSON, "\n  \"private_key\"") {
		t.Fatal("the fake should issue multi-line keys, as Google does")
	}
	sa, err := vertex.ParseKey("\n" + good.JSON + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if sa.ProjectID != "my-project" || sa.ClientEmail != good.Email || sa.TokenURI != tokens.URL || strings.Contains(sa.String(), "PRIVATE") {
		t.Fatalf("%+v", sa)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	edit := func(field, value string) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(good.JSON), &m)
		if value == "" {
			delete(m, field)
		} else {
			m[field] = value
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for name, key := range map[string]string{
		"empty":            "",
		"an API key":       "AIzaSyDUMMY",
		"two objects":      good.JSON + good.JSON,
		"wrong type":       edit("type", "authorized_user"),
		"no project":       edit("project_id", ""),
		"project with /":   edit("project_id", "a/b"),
		"no email":         edit("client_email", ""),
		"not PEM":          edit("private_key", "MIIE..."),
		"EC key":           edit("private_key", ecPEM),
		"token_uri scheme": edit("token_uri", "file:///etc/passwd"),
		"invalid UTF-8":    strings.Replace(good.JSON, "my-project", "my-\xffproject", 1),
	} {
		if _, err := vertex.ParseKey(key); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseRegion(t *testing.T) {
	for in, want := range map[string]string{"": "us-central1", " europe-west4 ": "europe-west4", "global": "global", "northamerica-northeast1": "northamerica-northeast1"} {
		if got, err := vertex.ParseRegion(in); err != nil || got != want {
			t.Errorf("ParseRegion(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"US-CENTRAL1", "us-central1/../x", "us", "us-central1.evil.com", "2024-10-21"} {
		if _, err := vertex.ParseRegion(in); err == nil {
			t.Errorf("ParseRegion(%q) accepted", in)
		}
	}
	if vertex.DefaultBaseURL("us-east5") != "https://us-east5-aiplatform.googleapis.com" || vertex.DefaultBaseURL("global") != "https://aiplatform.googleapis.com" {
		t.Fatal("default base URLs")
	}
}

func TestURLs(t *testing.T) {
	e := newEnv(t)
	c, err := vertex.New("", e.key.JSON, "", e.grants)
	if err != nil {
		t.Fatal(err)
	}
	base := "https://us-central1-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-central1/publishers/"
	for _, tc := range []struct {
		got  func() (string, error)
		want string
	}{
		{func() (string, error) { return c.GeminiURL("gemini-2.5-pro", false) }, base + "google/models/gemini-2.5-pro:generateContent"},
		{func() (string, error) { return c.GeminiURL("gemini-2.5-pro", true) }, base + "google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{func() (string, error) { return c.ClaudeURL("claude-sonnet-4@20250514", false) }, base + "anthropic/models/claude-sonnet-4@20250514:rawPredict"},
		{func() (string, error) { return c.ClaudeURL("claude-sonnet-4@20250514", true) }, base + "anthropic/models/claude-sonnet-4@20250514:streamRawPredict"},
	} {
		if got, err := tc.got(); err != nil || got != tc.want {
			t.Errorf("got %q, %v; want %q", got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "a/b", "m:x", "m?alt", "m n", "m%2F"} {
		if _, err := c.GeminiURL(bad, false); err == nil {
			t.Errorf("model %q accepted", bad)
		}
	}
}

func TestClaudeBody(t *testing.T) {
	in := `{"model":"claude","max_tokens":10,"stream":false,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	got, err := vertex.ClaudeBody([]byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"anthropic_version":"vertex-2023-10-16"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := vertex.ClaudeBody([]byte("{\"a\":\"\xff\"}"), false); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

func TestTokenReusedUntilFiveMinutesBeforeExpiry(t *testing.T) {
	e := newEnv(t)
	src := e.channel(t, e.key.JSON).Tokens()
	ctx := context.Background()
	first, err := src.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(55*time.Minute - time.Second) // the token lives 60 minutes
	if tok, _ := src.Token(ctx); tok != first {
		t.Fatal("token replaced before its refresh time")
	}
	if _, n := e.tokens.Grants(e.key.Email); n != 1 {
		t.Fatalf("%d grants, want 1", n)
	}
	e.clock.Add(time.Second)
	second, err := src.Token(ctx)
	if err != nil || second == first {
		t.Fatalf("token not refreshed 5 minutes before expiry: %v", err)
	}
	if _, n := e.tokens.Grants(e.key.Email); n != 2 {
		t.Fatalf("%d grants, want 2", n)
	}
	src.Invalidate()
	if third, _ := src.Token(ctx); third == second {
		t.Fatal("Invalidate kept the token")
	}
}

func TestConcurrentFirstCallsShareOneGrant(t *testing.T) {
	e := newEnv(t)
	// Two channels of one key share the account's token source.
	a, b := e.channel(t, e.key.JSON), e.channel(t, " "+e.key.JSON)
	var wg sync.WaitGroup
	tokens := make([]string, 200)
	errs := make([]error, 200)
	for i := range tokens {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i], errs[i] = c.Tokens().Token(context.Background())
		}()
	}
	wg.Wait()
	for i := range tokens {
		if errs[i] != nil || tokens[i] != tokens[0] {
			t.Fatalf("call %d: %q, %v", i, tokens[i], errs[i])
		}
	}
	if all, _ := e.tokens.Grants(e.key.Email); all != 1 {
		t.Fatalf("%d grants, want 1", all)
	}
}

func TestRefusedGrants(t *testing.T) {
	e := newEnv(t)
	other := e.tokens.NewServiceAccount(t, "other", "proj-1")
	// The key names one account but holds another's private key: the
	// assertion's signature does not verify.
	var m map[string]string
	var o map[string]string
	_ = json.Unmarshal([]byte(e.key.JSON), &m)
	_ = json.Unmarshal([]byte(other.JSON), &o)
	m["private_key"] = o["private_key"]
	swapped, _ := json.Marshal(m)

	e.tokens.Disable(other.Email)
	for name, key := range map[string]string{"wrong private key": string(swapped), "disabled account": other.JSON} {
		t.Run(name, func(t *testing.T) {
			c := e.channel(t, key)
			_, err := c.NewGeminiRequest(context.Background(), "gemini-2.5-flash", false, []byte(`{}`))
			var r *refusal.Error
			if !errors.As(err, &r) || r.Kind != refusal.Key || r.Code != "invalid_grant" {
				t.Fatalf("err %v", err)
			}
		})
	}
	if all, _ := e.tokens.Grants(""); all != 0 {
		t.Fatalf("%d grants", all)
	}
}

func TestCancelledCallerLeavesTheGrantToOthers(t *testing.T) {
	e := newEnv(t)
	src := e.channel(t, e.key.JSON).Tokens()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if all, _ := e.tokens.Grants(""); all != 1 {
		t.Fatalf("%d grants, want 1 (the abandoned grant is reused)", all)
	}
}

// send returns a function that sends the request a constructor made.
func send(t *testing.T) func(*http.Request, error) (int, []byte) {
	return func(req *http.Request, err error) (int, []byte) {
		t.Helper()
		return sendRequest(t, req, err)
	}
}

func sendRequest(t *testing.T, req *http.Request, err error) (int, []byte) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestAgainstFake(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.key.JSON)
	ctx := context.Background()
	gemini := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	claude := `{"model":"claude-sonnet-4","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

	status, b := send(t)(c.NewGeminiRequest(ctx, "gemini-2.5-flash", false, []byte(gemini)))
	if status != 200 || !strings.Contains(string(b), fakeupstream.DefaultReply) {
		t.Fatalf("gemini: %d %s", status, b)
	}
	if got := e.fake.LastRequest(t); got.Path != "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("path %s", got.Path)
	}
	status, b = send(t)(c.NewGeminiRequest(ctx, "gemini-2.5-flash", true, []byte(gemini)))
	if status != 200 || !strings.HasPrefix(string(b), "data: ") {
		t.Fatalf("gemini stream: %d %s", status, b)
	}
	status, b = send(t)(c.NewClaudeRequest(ctx, "claude-sonnet-4@20250514", false, []byte(claude)))
	if status != 200 || !strings.Contains(string(b), `"type":"message"`) {
		t.Fatalf("claude: %d %s", status, b)
	}
	if got := e.backend.LastRequest(); got.Model != "claude-sonnet-4@20250514" || got.Stream {
		t.Fatalf("backend %+v", got)
	}
	status, b = send(t)(c.NewClaudeRequest(ctx, "claude-sonnet-4@20250514", true, []byte(claude)))
	if status != 200 || !strings.Contains(string(b), "event: message_stop") {
		t.Fatalf("claude stream: %d %s", status, b)
	}
	if all, _ := e.tokens.Grants(""); all != 1 {
		t.Fatalf("%d grants for four calls, want 1", all)
	}

	// A forged token and one the fake no longer knows are refused as the key.
	for _, tok := range []string{"ya29.forged", ""} {
		req, _ := http.NewRequest(http.MethodPost, e.fake.URL+"/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent", strings.NewReader(gemini))
		req.Header.Set("Authorization", "Bearer "+tok)
		status, b := sendRequest(t, req, nil)
		if r := vertex.Classify(status, b); status != 401 || r.Kind != refusal.Key {
			t.Fatalf("token %q: %d %+v", tok, status, r)
		}
	}
	// A token the endpoint sees as expired (its clock ran ahead of ours).
	e.tokens.SetClock(func() time.Time { return e.clock.Now().Add(2 * time.Hour) })
	status, b = send(t)(c.NewGeminiRequest(ctx, "gemini-2.5-flash", false, []byte(gemini)))
	if r := vertex.Classify(status, b); status != 401 || r.Kind != refusal.Key {
		t.Fatalf("expired: %d %+v", status, r)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   refusal.Kind
	}{
		{401, `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`, refusal.Key},
		{403, `{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"reason":"IAM_PERMISSION_DENIED"}]}}`, refusal.Key},
		{403, `[{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"reason":"SERVICE_DISABLED"}]}}]`, refusal.Key},
		{403, `{"error":{"code":403,"status":"PERMISSION_DENIED","message":"blocked content"}}`, refusal.Request},
		{429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`, refusal.Throttled},
		{400, `{"error":{"code":400,"status":"INVALID_ARGUMENT"}}`, refusal.Request},
		{404, `{"error":{"code":404,"status":"NOT_FOUND"}}`, refusal.Request},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, refusal.Upstream},
		{500, `oops`, refusal.Upstream},
	} {
		if got := vertex.Classify(tc.status, []byte(tc.body)); got.Kind != tc.want {
			t.Errorf("Classify(%d, %s) = %+v, want %v", tc.status, tc.body, got, tc.want)
		}
	}
}
