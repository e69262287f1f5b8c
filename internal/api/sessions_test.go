package api_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/auth"
)

// Not parallel: it reads the process-wide count of password checks.
func TestParallelLoginsEvaluateAtMostTheLimit(t *testing.T) {
	e := apptest.New(t)
	e.Root().OK("POST", "/api/user/", map[string]any{"username": "victim", "password": "right-password"})

	const attempts = 100
	var mu sync.Mutex
	answers := map[string]int{}
	checksBefore := auth.PasswordChecks()
	var wg sync.WaitGroup
	for range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Wrong passwords only: a right one clears the counter by design
			// (a successful login never counts towards the limit), so with
			// one among them up to twice the limit would be checked,
			// depending on when it lands.
			r := e.Client().Do("POST", "/api/user/login", map[string]string{"username": "victim", "password": "wrong-password"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Success:
				answers["ok"]++
			case r.Status == http.StatusTooManyRequests && r.Message == auth.MsgTooManyAttempts:
				answers["throttled"]++
			case r.Message == api.MsgLoginFailed:
				answers["failed"]++
			default:
				t.Errorf("unexpected answer %d %s", r.Status, r.Raw)
			}
		}()
	}
	wg.Wait()
	const limit = 5 // per (username, ip): docs/api.md, Authentication
	if evaluated := answers["ok"] + answers["failed"]; evaluated > limit || answers["ok"] > 0 || answers["throttled"] < attempts-limit {
		t.Errorf("answers %v: want at most %d evaluated, the rest throttled", answers, limit)
	}
	if checks := auth.PasswordChecks() - checksBefore; checks > limit {
		t.Errorf("%d passwords checked, want at most %d", checks, limit)
	}
}

// Not parallel: it reads the process-wide count of password checks.
func TestUnknownUsernameCostsAPasswordCheck(t *testing.T) {
	e := apptest.New(t)
	c := e.Client()
	for _, username := range []string{"nobody-here", "root"} {
		before := auth.PasswordChecks()
		c.Fail("POST", "/api/user/login", map[string]string{"username": username, "password": "wrong-password"}, http.StatusOK, api.MsgLoginFailed)
		if n := auth.PasswordChecks() - before; n != 1 {
			t.Errorf("login as %q checked %d passwords, want 1 (same cost for known and unknown names)", username, n)
		}
	}
}

// copyOf is a second client replaying c's current cookie: a copy of the old
// cookie kept by a thief or another tab.
func copyOf(e *apptest.Env, c *apptest.Client) *apptest.Client {
	old := e.Client()
	old.Header.Set("Cookie", c.CookieHeader())
	return old
}

func TestLogoutEndsEverySessionOfTheUser(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c, _ := e.NewUser("alice", 1)
	other := e.Client()
	other.Login("alice", "password-alice")
	old := copyOf(e, c)
	old.OK("GET", "/api/user/self", nil)

	c.OK("GET", "/api/user/logout", nil)
	old.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	other.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	// A stale cookie's logout does not end the session made after it.
	c.Login("alice", "password-alice")
	old.OK("GET", "/api/user/logout", nil)
	c.OK("GET", "/api/user/self", nil)
}

func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c, id := e.NewUser("bob", 1)
	old := copyOf(e, c)
	c.OK("PUT", "/api/user/self", map[string]any{"password": "new-password-1"})
	old.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	c.OK("GET", "/api/user/self", nil) // this browser got a fresh cookie

	// An admin's reset ends them too.
	old = copyOf(e, c)
	e.Root().OK("PUT", "/api/user/", map[string]any{"id": id, "password": "new-password-2"})
	old.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
}

func TestBanAndRoleChangeEndSessions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	c, _ := e.NewUser("carol", 1)
	manage := func(action string) {
		root.OK("POST", "/api/user/manage", map[string]string{"username": "carol", "action": action})
	}

	manage("disable")
	c.Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgUserBanned)
	manage("enable")
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)

	c.Login("carol", "password-carol")
	manage("promote")
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	c.Login("carol", "password-carol")
	manage("demote")
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)

	c.Login("carol", "password-carol")
	manage("delete")
	c.Fail("GET", "/api/user/self", nil, http.StatusOK, api.MsgUserBanned)
	manage("enable")
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
}

// TestSameSitePageCannotChangeState pins issue 30 §4: a page on another
// port of the same host is same-site, so the session cookie rides along on
// its <img> or form; it must not rotate a token, test a channel or log out,
// by GET (the spec's routes) or by POST (the console's).
func TestSameSitePageCannotChangeState(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c, _ := e.NewUser("dave", 1)
	root := e.Root()
	before := apptest.OKData[apptest.UserInfo](c, "GET", "/api/user/self", nil).AccessToken
	u, _ := url.Parse(e.URL())
	otherPort := "http://" + u.Hostname() + ":1"
	attacks := []struct{ site, origin string }{
		{"same-site", otherPort}, {"cross-site", "https://evil.example"}, {"", otherPort},
	}
	for _, a := range attacks {
		for _, cl := range []*apptest.Client{c, root} {
			cl.Header = http.Header{}
			if a.site != "" {
				cl.Header.Set("Sec-Fetch-Site", a.site)
			}
			cl.Header.Set("Origin", a.origin)
		}
		for _, method := range []string{"GET", "POST"} {
			c.Fail(method, "/api/user/token", nil, http.StatusForbidden, api.MsgCrossSite)
			c.Fail(method, "/api/user/logout", nil, http.StatusForbidden, api.MsgCrossSite)
			root.Fail(method, "/api/channel/test/1", nil, http.StatusForbidden, api.MsgCrossSite)
		}
	}
	c.Header, root.Header = http.Header{}, http.Header{}
	// Nothing changed: the session lives and the token is the same.
	if got := apptest.OKData[apptest.UserInfo](c, "GET", "/api/user/self", nil).AccessToken; got != before {
		t.Fatalf("access token changed from %q to %q by a refused request", before, got)
	}

	// Same-origin (the console), a typed address (none) and clients
	// without Fetch metadata go ahead, by GET and by POST.
	for _, site := range []string{"same-origin", "none", ""} {
		c.Header = http.Header{}
		if site != "" {
			c.Header.Set("Sec-Fetch-Site", site)
		}
		c.OK("GET", "/api/user/token", nil)
		c.OK("POST", "/api/user/token", nil)
	}
	c.Header = http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {e.URL()}}
	c.OK("POST", "/api/user/logout", nil)
	c.Header = http.Header{}
	c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
}

func TestEveryAnswerIsNosniff(t *testing.T) {
	e := apptest.New(t)
	c := e.Client()
	for _, path := range []string{"/api/status", "/api/user/self", "/api/nope", "/v1/models", "/", "/login", "/healthz", "/api/order"} {
		r := c.Do("GET", path, nil)
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (%d): X-Content-Type-Options = %q", path, r.Status, got)
		}
	}
}

// TestCollectionWithoutSlash pins issue 30 §5: GET /api/order?p=0 answers
// the list itself, not a 307 to /api/order/.
func TestCollectionWithoutSlash(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	// Not following redirects: a followed 307 would end in the list too.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/api/order?p=0", "/api/user?p=0", "/api/log?p=0", "/api/channel", "/api/option", "/api/token"} {
		req, _ := http.NewRequest("GET", e.URL()+path, nil)
		req.Header.Set("Cookie", root.CookieHeader())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), `{"success":true`) {
			t.Errorf("GET %s = %d %.80s", path, resp.StatusCode, body)
		}
	}
	root.OK("POST", "/api/token", map[string]any{"name": "no-slash"})
}

func TestCrossOriginWriteGetsTheEnvelope(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c := e.Root()
	c.Header.Set("Sec-Fetch-Site", "cross-site")
	c.Fail("POST", "/api/token/", map[string]any{"name": "k"}, http.StatusForbidden, api.MsgCrossSite)
	c.Header.Del("Sec-Fetch-Site")
	c.Header.Set("Origin", "https://evil.example")
	c.Fail("PUT", "/api/user/self", map[string]any{"display_name": "x"}, http.StatusForbidden, api.MsgCrossSite)
}
