package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/oidcfake"
)

type oidcSite struct {
	e     *apptest.Env
	root  *apptest.Client
	idp   *oidcfake.Provider
	clock *apptest.Clock
}

func newOIDCSite(t *testing.T) *oidcSite {
	t.Helper()
	e := apptest.New(t)
	clock := apptest.NewClock(time.Now())
	e.App.SetClock(clock.Now)
	idp := oidcfake.Start(t, "gate-client", "gate-secret", clock.Now)
	root := e.Root()
	for k, v := range map[string]any{"OidcEnabled": true, "OidcClientId": "gate-client", "OidcClientSecret": "gate-secret",
		"OidcWellKnown": idp.WellKnown(), "NewUserQuota": 1000} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	return &oidcSite{e: e, root: root, idp: idp, clock: clock}
}

// signIn runs the console's flow in c: start (state, nonce, PKCE), the
// provider's authorize redirect, then the callback.
func (o *oidcSite) signIn(t *testing.T, c *apptest.Client) *apptest.Response {
	t.Helper()
	var target string
	c.OK("GET", "/api/oauth/oidc/start", nil).Decode(t, &target)
	u, err := url.Parse(target)
	if err != nil || u.Query().Get("code_challenge") == "" || u.Query().Get("nonce") == "" {
		t.Fatalf("authorization URL %q", target)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Path != "/oauth/oidc" {
		t.Fatalf("authorize answered %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return c.Do("GET", "/api/oauth/oidc?"+url.Values{"code": {back.Query().Get("code")}, "state": {back.Query().Get("state")}}.Encode(), nil)
}

func TestOIDCCreatesLogsInAndBinds(t *testing.T) {
	apptest.Parallel(t)
	o := newOIDCSite(t)
	o.idp.SetUser(oidcfake.User{Subject: "sub-1", PreferredUsername: "root", Email: "rooty@example.com", EmailVerified: true})
	c := o.e.Client()
	r := o.signIn(t, c)
	var u struct {
		ID       int64
		Username string
		Email    string
		Quota    int64
	}
	r.Decode(t, &u)
	// "root" is taken: the name is made unique; the verified email is kept.
	if !r.Success || u.Username == "root" || len(u.Username) < 6 || u.Username[:5] != "root_" || u.Email != "rooty@example.com" || u.Quota != 1000 {
		t.Fatalf("created %+v (%s)", u, r.Raw)
	}
	c.OK("GET", "/api/user/self", nil)
	// The same subject logs into the same user from another browser.
	var again struct{ ID int64 }
	o.signIn(t, o.e.Client()).Decode(t, &again)
	if again.ID != u.ID {
		t.Fatalf("second sign-in is user %d, want %d", again.ID, u.ID)
	}
	// A logged-in user binds a new subject; afterwards it logs in with it.
	mine, id := o.e.NewUser("judy", 1)
	o.idp.SetUser(oidcfake.User{Subject: "sub-2", PreferredUsername: "whatever"})
	if r := o.signIn(t, mine); !r.Success || r.Message != "bind" {
		t.Fatalf("bind: %s", r.Raw)
	}
	var judySelf struct {
		OidcID   string `json:"oidc_id"`
		GitHubID string `json:"github_id"`
	}
	mine.OK("GET", "/api/user/self", nil).Decode(t, &judySelf)
	if judySelf.OidcID != "sub-2" || judySelf.GitHubID != "" {
		t.Fatalf("self view after binding: %+v", judySelf)
	}
	var judy struct{ ID int64 }
	o.signIn(t, o.e.Client()).Decode(t, &judy)
	if judy.ID != id {
		t.Fatalf("bound sign-in is user %d, want %d", judy.ID, id)
	}
	// A subject bound to someone else cannot be bound again.
	o.idp.SetUser(oidcfake.User{Subject: "sub-1"})
	if r := o.signIn(t, mine); r.Success || r.Message != api.MsgOAuthBoundToOther {
		t.Fatalf("rebind: %s", r.Raw)
	}
}

func TestOIDCRefusesBadStateAndTokens(t *testing.T) {
	apptest.Parallel(t)
	o := newOIDCSite(t)
	o.idp.SetUser(oidcfake.User{Subject: "sub-9", PreferredUsername: "kate"})
	c := o.e.Client()
	redirect := o.e.Server.URL + "/oauth/oidc"
	// A caller that skips PKCE and nonce: state from /api/oauth/state.
	var state string
	c.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	c.Fail("GET", "/api/oauth/oidc?code="+o.idp.Grant(redirect)+"&state=wrong", nil, http.StatusOK, api.MsgOAuthState)
	// The state was used up by the refusal: a new one is needed.
	c.Fail("GET", "/api/oauth/oidc?code="+o.idp.Grant(redirect)+"&state="+state, nil, http.StatusOK, api.MsgOAuthState)
	// Another browser's state is not this one's.
	other := o.e.Client()
	other.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	c.Fail("GET", "/api/oauth/oidc?code="+o.idp.Grant(redirect)+"&state="+state, nil, http.StatusOK, api.MsgOAuthState)

	for name, spoil := range map[string]oidcfake.Spoil{
		"wrong audience": {Audience: "someone-else"},
		"expired":        {ExpiredBy: time.Minute},
		"bad signature":  {BadSign: true},
		"wrong nonce":    {Nonce: "not-the-flows"},
	} {
		o.idp.SetSpoil(spoil)
		if r := o.signIn(t, c); r.Success || r.Message != api.MsgOAuthFailed {
			t.Errorf("%s: %s", name, r.Raw)
		}
	}
	o.idp.SetSpoil(oidcfake.Spoil{})
	// A plain caller (no nonce, no PKCE) with a valid state signs in.
	c.OK("GET", "/api/oauth/state", nil).Decode(t, &state)
	var u struct{ Username string }
	c.OK("GET", "/api/oauth/oidc?code="+o.idp.Grant(redirect)+"&state="+state, nil).Decode(t, &u)
	if u.Username != "kate" {
		t.Fatalf("username %q", u.Username)
	}
	// Every spoiled token was issued: the refusals are the gateway's.
	if o.idp.Tokens < 5 {
		t.Fatalf("%d token exchanges", o.idp.Tokens)
	}
}

func TestOIDCRegistrationClosed(t *testing.T) {
	apptest.Parallel(t)
	o := newOIDCSite(t)
	o.root.OK("PUT", "/api/option/", map[string]any{"key": "RegisterEnabled", "value": false})
	o.idp.SetUser(oidcfake.User{Subject: "sub-x", PreferredUsername: "leo"})
	if r := o.signIn(t, o.e.Client()); r.Success || r.Message != api.MsgRegisterClosed {
		t.Fatalf("closed registration: %s", r.Raw)
	}
	o.root.OK("PUT", "/api/option/", map[string]any{"key": "OidcEnabled", "value": false})
	o.e.Client().Fail("GET", "/api/oauth/oidc?code=x&state=y", nil, http.StatusOK, api.MsgOAuthDisabled)
}
