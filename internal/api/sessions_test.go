package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/auth"
)

// Not parallel: it reads the process-wide count of password checks.
func TestParallelLoginsEvaluateAtMostTheLimit(t *testing.T) {
	apptest.Parallel(t)
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
	apptest.Parallel(t)
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

func TestStateChangingGETsRefuseCrossSite(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	c, _ := e.NewUser("dave", 1)
	root := e.Root()
	for _, path := range []string{"/api/user/token", "/api/user/logout"} {
		c.Header.Set("Sec-Fetch-Site", "cross-site")
		c.Fail("GET", path, nil, http.StatusForbidden, api.MsgCrossSite)
		c.Header.Del("Sec-Fetch-Site")
	}
	root.Header.Set("Sec-Fetch-Site", "cross-site")
	root.Fail("GET", "/api/channel/test/1", nil, http.StatusForbidden, api.MsgCrossSite)
	root.Header.Del("Sec-Fetch-Site")

	// The session survived the refused logout; same-origin, same-site, a
	// typed address (none) and clients without Fetch metadata go ahead.
	for _, site := range []string{"same-origin", "same-site", "none", ""} {
		if site != "" {
			c.Header.Set("Sec-Fetch-Site", site)
		}
		c.OK("GET", "/api/user/token", nil)
	}
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
