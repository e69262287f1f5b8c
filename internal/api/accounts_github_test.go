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

// A logged-in user binds a GitHub account from the profile page: the
// callback answers "bind", the self view shows the bound id, that GitHub
// account then logs into this user, and it cannot be bound to another.
func TestGitHubBindsToLoggedInUser(t *testing.T) {
	gh, grant := fakeGitHub(t, "gh-client", "gh-secret")
	e := apptest.New(t, "GITHUB_OAUTH_BASE_URL", gh.URL, "GITHUB_API_BASE_URL", gh.URL)
	root := e.Root()
	for k, v := range map[string]any{"GitHubOAuthEnabled": true, "GitHubClientId": "gh-client", "GitHubClientSecret": "gh-secret"} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	callback := func(c *apptest.Client, id int64, login string) *apptest.Response {
		t.Helper()
		var state string
		c.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
		return c.Do("GET", "/api/oauth/github?code="+grant(id, login)+"&state="+state, nil)
	}
	var self struct {
		ID       int64  `json:"id"`
		GitHubID string `json:"github_id"`
		OidcID   string `json:"oidc_id"`
	}
	kim, kimID := e.NewUser("kim", 1)
	kim.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.GitHubID != "" || self.OidcID != "" {
		t.Fatalf("fresh user shows bindings %+v", self)
	}
	if r := callback(kim, 777, "kim-gh"); !r.Success || r.Message != "bind" {
		t.Fatalf("bind: %s", r.Raw)
	}
	kim.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.GitHubID != "777" || self.OidcID != "" {
		t.Fatalf("after binding: %+v", self)
	}
	// The bound GitHub account logs into kim, and binding it again (kim
	// is still logged in) is a plain login of kim.
	var in struct{ ID int64 }
	callback(e.Client(), 777, "kim-gh").Decode(t, &in)
	if in.ID != kimID {
		t.Fatalf("bound sign-in is user %d, want %d", in.ID, kimID)
	}
	if r := callback(kim, 777, "kim-gh"); !r.Success || r.Message == "bind" {
		t.Fatalf("second bind of the same account: %s", r.Raw)
	}
	// Another user cannot take it, and keeps no binding.
	lee, _ := e.NewUser("lee", 1)
	if r := callback(lee, 777, "kim-gh"); r.Success || r.Message != api.MsgOAuthBoundToOther {
		t.Fatalf("bind to another: %s", r.Raw)
	}
	lee.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.GitHubID != "" {
		t.Fatalf("lee got %q", self.GitHubID)
	}
	// A forged state binds nothing.
	kim.Fail("GET", "/api/oauth/github?code="+grant(778, "x")+"&state=forged", nil, http.StatusOK, api.MsgOAuthState)
}
