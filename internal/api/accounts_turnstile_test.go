package api_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
)

// fakeSiteverify answers like Cloudflare's siteverify: form fields secret
// and response; success only for the one token it issued under its secret.
func fakeSiteverify(t *testing.T, secret, token string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodPost || r.ParseForm() != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("secret") != secret {
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-secret"]}`))
			return
		}
		if r.PostForm.Get("response") != token || r.PostForm.Get("remoteip") == "" {
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-response"]}`))
			return
		}
		_, _ = w.Write([]byte(`{"success":true,"hostname":"localhost"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestTurnstileGuardsRegistrationAndMails(t *testing.T) {
	apptest.Parallel(t)
	sv, calls := fakeSiteverify(t, "ts-secret", "good-token")
	e := apptest.New(t, "TURNSTILE_VERIFY_URL", sv.URL)
	root := e.Root()
	for k, v := range map[string]any{"TurnstileCheckEnabled": true, "TurnstileSiteKey": "site-key", "TurnstileSecretKey": "ts-secret"} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	c := e.Client()
	body := map[string]string{"username": "kim", "password": "password-1"}
	c.Fail("POST", "/api/user/register", body, http.StatusOK, api.MsgTurnstileMissing)
	c.Fail("POST", "/api/user/register?turnstile=bad-token", body, http.StatusOK, api.MsgTurnstileFailed)
	c.Fail("GET", "/api/reset_password?email=kim@example.com", nil, http.StatusOK, api.MsgTurnstileMissing)
	c.Fail("GET", "/api/verification?email=kim@example.com&turnstile=bad", nil, http.StatusOK, api.MsgTurnstileFailed)
	c.OK("POST", "/api/user/register?turnstile=good-token", body)
	body["username"], body["turnstile"] = "kim2", "good-token"
	c.OK("POST", "/api/user/register", body)
	if calls.Load() != 4 {
		t.Fatalf("siteverify called %d times", calls.Load())
	}
	// The secret is never read back; the site key is public.
	for _, o := range apptest.OKData[[]struct{ Key, Value string }](root, "GET", "/api/option/", nil) {
		if o.Key == "TurnstileSecretKey" || o.Value == "ts-secret" {
			t.Fatalf("secret shown: %+v", o)
		}
	}
	var st struct {
		Check   bool   `json:"turnstile_check"`
		SiteKey string `json:"turnstile_site_key"`
	}
	c.OK("GET", "/api/status", nil).Decode(t, &st)
	if !st.Check || st.SiteKey != "site-key" {
		t.Fatalf("status %+v", st)
	}
	// A siteverify that does not answer refuses (fail closed).
	sv.Close()
	c.Fail("POST", "/api/user/register", map[string]string{"username": "kim3", "password": "password-1", "turnstile": "good-token"},
		http.StatusServiceUnavailable, api.MsgTurnstileDown)
}
