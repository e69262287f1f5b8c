package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
)

// fakeGitHub speaks GitHub's OAuth web flow's token exchange and GET /user:
// client credentials and the code are checked, the token is required.
func fakeGitHub(t *testing.T, clientID, secret string) (srv *httptest.Server, grant func(id int64, login string) string) {
	t.Helper()
	var mu sync.Mutex
	codes := map[string]map[string]any{}
	tokens := map[string]map[string]any{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		u, ok := codes[r.PostForm.Get("code")]
		delete(codes, r.PostForm.Get("code"))
		if r.PostForm.Get("client_id") != clientID || r.PostForm.Get("client_secret") != secret || !ok || r.Header.Get("Accept") != "application/json" {
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad_verification_code"})
			return
		}
		tok := "gho_" + r.PostForm.Get("code")
		tokens[tok] = u
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": tok, "token_type": "bearer", "scope": ""})
	})
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		u, ok := tokens[r.Header.Get("Authorization")[len("Bearer "):]]
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(u)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	n := 0
	return srv, func(id int64, login string) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		code := "code" + string(rune('a'+n))
		codes[code] = map[string]any{"id": id, "login": login, "email": "public@example.com"}
		return code
	}
}

func TestGitHubSignIn(t *testing.T) {
	apptest.Parallel(t)
	gh, grant := fakeGitHub(t, "gh-client", "gh-secret")
	e := apptest.New(t, "GITHUB_OAUTH_BASE_URL", gh.URL, "GITHUB_API_BASE_URL", gh.URL)
	root := e.Root()
	c := e.Client()
	c.Fail("GET", "/api/oauth/github?code=x&state=y", nil, http.StatusOK, api.MsgOAuthDisabled)
	for k, v := range map[string]any{"GitHubOAuthEnabled": true, "GitHubClientId": "gh-client", "GitHubClientSecret": "gh-secret"} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	var state string
	c.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	c.Fail("GET", "/api/oauth/github?code=unknown&state="+state, nil, http.StatusOK, api.MsgOAuthFailed)
	c.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	var u struct {
		ID       int64
		Username string
		Email    string
	}
	c.OK("GET", "/api/oauth/github?code="+grant(4242, "octo cat")+"&state="+state, nil).Decode(t, &u)
	if u.Username != "octo_cat" || u.Email != "" {
		t.Fatalf("created %+v", u)
	}
	c.OK("GET", "/api/user/self", nil)
	// The same GitHub id, renamed, is the same user.
	other := e.Client()
	other.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	var again struct{ ID int64 }
	other.OK("GET", "/api/oauth/github?code="+grant(4242, "renamed")+"&state="+state, nil).Decode(t, &again)
	if again.ID != u.ID {
		t.Fatalf("user %d, want %d", again.ID, u.ID)
	}
}
