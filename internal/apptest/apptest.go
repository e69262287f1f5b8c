// Package apptest runs the real gateway for tests: a fresh database (SQLite
// in the test's temp dir, or the engine MODELGATE_TEST_DB selects), the app
// built by app.New, and an httptest server in front of it. Clients speak
// HTTP to it like any other caller.
package apptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// Fixed credentials of the test gateway.
const (
	RootPassword    = "root-password-1"
	RootAccessToken = "test-root-access-token-0123456789"
	SessionSecret   = "test-session-secret-0123456789"
)

// Env is one running gateway.
type Env struct {
	t      testing.TB
	App    *app.App
	Server *httptest.Server
	Config config.Config
	// attached is set for a gateway this Env did not start (Attach).
	attached bool
	// down makes the server drop every connection (Pause).
	down atomic.Bool
	// fleet is the nodes sharing this gateway's database (SecondNode).
	fleet *fleet
}

// New starts a gateway for t and stops it when t ends. env is pairs of run
// contract variables that override the test defaults. With
// MODELGATE_TEST_REDIS set, the gateway uses that Redis under a key prefix of
// its own.
func New(t testing.TB, env ...string) *Env {
	t.Helper()
	return NewWith(t, nil, env...)
}

// NewWith is New with options of app.New (fake payment providers).
func NewWith(t testing.TB, opts []app.Option, env ...string) *Env {
	t.Helper()
	return Start(t, Config(t, env...), opts...)
}

// Config is the configuration New starts with: the test defaults, then
// env's pairs of run contract variables.
func Config(t testing.TB, env ...string) config.Config {
	t.Helper()
	vars := map[string]string{
		"DATA_DIR":              t.TempDir(),
		"INITIAL_ROOT_PASSWORD": RootPassword,
		"ROOT_ACCESS_TOKEN":     RootAccessToken,
		"SESSION_SECRET":        SessionSecret,
		"SQL_DSN":               storetest.Selected(t).FreshDSN(t),
		// The suites run several gateways at once (three-node clusters,
		// packages in parallel) against one PostgreSQL of 100 clients.
		"SQL_MAX_OPEN_CONNS": "12",
	}
	if url := os.Getenv("MODELGATE_TEST_REDIS"); url != "" {
		vars["REDIS_CONN_STRING"] = url
		vars["REDIS_KEY_PREFIX"] = "mgtest:" + rand.Text() + ":"
	}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	cfg, err := config.Load(nil, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.PasswordCost = 4 // bcrypt's minimum: the suites create many users
	return cfg
}

// Start runs a gateway with cfg (a restart test starts twice on one DataDir).
func Start(t testing.TB, cfg config.Config, opts ...app.Option) *Env {
	t.Helper()
	return startOn(t, cfg, nil, opts...)
}

// startOn is Start serving on ln (nil: a new loopback port).
func startOn(t testing.TB, cfg config.Config, ln net.Listener, opts ...app.Option) *Env {
	t.Helper()
	level := slog.LevelError
	if os.Getenv("MODELGATE_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	return startLogged(t, cfg, ln, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})), opts...)
}

// StartWithLog is Start logging to log (a test reading the gateway's log
// lines).
func StartWithLog(t testing.TB, cfg config.Config, log *slog.Logger, opts ...app.Option) *Env {
	t.Helper()
	return startLogged(t, cfg, nil, log, opts...)
}

func startLogged(t testing.TB, cfg config.Config, ln net.Listener, log *slog.Logger, opts ...app.Option) *Env {
	t.Helper()
	seedFromTemplate(t, cfg)
	a, err := app.New(context.Background(), cfg, log, opts...)
	if err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	e := &Env{t: t, App: a, Config: cfg}
	srv := httptest.NewUnstartedServer(e.gated(a.Handler()))
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	e.Server = srv
	t.Cleanup(e.Stop)
	return e
}

// Attach is an Env for a gateway running elsewhere, such as a modelgate
// process the test started, listening at url. App is nil: helpers that flush
// the ledger (SettleAll, Quota, Accounts) cannot be used on it.
func Attach(t testing.TB, url string) *Env {
	return &Env{t: t, Server: &httptest.Server{URL: url}, attached: true}
}

// Stop shuts the gateway down (idempotent).
func (e *Env) Stop() {
	if e.Server == nil || e.attached {
		return
	}
	e.Server.Close()
	if err := e.App.Close(); err != nil {
		e.t.Errorf("close gateway: %v", err)
	}
	e.Server = nil
}

// DBPath is the SQLite file of the gateway.
func (e *Env) DBPath() string { return filepath.Join(e.Config.DataDir, "modelgate.db") }

// Client is an HTTP client of the gateway with its own cookie jar.
type Client struct {
	t      testing.TB
	base   string
	http   *http.Client
	Header http.Header // sent with every request
	// sign, when set, signs every request (SignAs).
	sign func(req *http.Request)
}

// Client returns a new anonymous client.
func (e *Env) Client() *Client {
	jar, _ := cookiejar.New(nil)
	return &Client{t: e.t, base: e.Server.URL, http: &http.Client{Jar: jar}, Header: http.Header{}}
}

// Root returns a client logged in as root by session cookie.
func (e *Env) Root() *Client {
	c := e.Client()
	c.Login("root", RootPassword)
	return c
}

// Response is a decoded /api answer.
type Response struct {
	Status  int
	Raw     []byte
	Success bool            `json:"success"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Total   int64           `json:"total"`
	Header  http.Header
}

// Do sends a request; body is marshalled to JSON unless it is a string or
// []byte, which are sent as they are.
func (c *Client) Do(method, path string, body any) *Response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sign != nil {
		c.sign(req)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := &Response{Status: resp.StatusCode, Header: resp.Header}
	r.Raw, err = io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if err := json.Unmarshal(r.Raw, r); err != nil && strings.HasPrefix(path, "/api/") {
		c.t.Fatalf("%s %s: not a JSON envelope (%d): %s", method, path, r.Status, r.Raw)
	}
	return r
}

// OK sends a request and fails the test unless it succeeded.
func (c *Client) OK(method, path string, body any) *Response {
	c.t.Helper()
	r := c.Do(method, path, body)
	if r.Status != http.StatusOK || !r.Success {
		c.t.Fatalf("%s %s: want success, got %d %s", method, path, r.Status, r.Raw)
	}
	return r
}

// Fail sends a request and fails the test unless it failed with status and
// exactly message (message "" accepts any).
func (c *Client) Fail(method, path string, body any, status int, message string) *Response {
	c.t.Helper()
	r := c.Do(method, path, body)
	if r.Status != status || r.Success || (message != "" && r.Message != message) {
		c.t.Fatalf("%s %s: want %d %q, got %d %s", method, path, status, message, r.Status, r.Raw)
	}
	return r
}

// OKData sends a request, fails the test unless it succeeded, and returns
// its data decoded as T.
func OKData[T any](c *Client, method, path string, body any) T {
	c.t.Helper()
	var v T
	c.OK(method, path, body).Decode(c.t, &v)
	return v
}

// Decode unmarshals the response data into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode data %s: %v", r.Data, err)
	}
}

// Login logs the client in by password.
func (c *Client) Login(username, password string) *Response {
	c.t.Helper()
	return c.OK("POST", "/api/user/login", map[string]string{"username": username, "password": password})
}

// Bearer makes the client send an Authorization header instead of cookies.
func (c *Client) Bearer(token string) *Client {
	c.Header.Set("Authorization", "Bearer "+token)
	return c
}

// UserInfo is the part of a user view tests read.
type UserInfo struct {
	ID          int64  `json:"id"`
	Username    string `json:"username"`
	Role        int    `json:"role"`
	Status      int    `json:"status"`
	Quota       int64  `json:"quota"`
	Group       string `json:"group"`
	AccessToken string `json:"access_token"`
}

// NewUser creates a user with role through root and returns a client logged
// in as that user and its id.
func (e *Env) NewUser(username string, role int) (*Client, int64) {
	e.t.Helper()
	password := "password-" + username
	var u UserInfo
	e.Root().OK("POST", "/api/user/", map[string]any{"username": username, "password": password, "role": role}).Decode(e.t, &u)
	c := e.Client()
	c.Login(username, password)
	return c, u.ID
}

// Path formats a path with arguments.
func Path(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// CookieHeader is the Cookie header the client would send to the gateway,
// to replay a session against another server (restart tests).
func (c *Client) CookieHeader() string {
	u, _ := url.Parse(c.base)
	var parts []string
	for _, ck := range c.http.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; ")
}

// Parallel marks t as a parallel test when the gateways run on SQLite,
// where each test has its own file and nothing else is shared. On a
// database server the tests stay serial: their schemas are separate, but
// the server's connections (100 on CI's PostgreSQL) are not, and several
// clusters of gateways at once would exhaust them.
func Parallel(t *testing.T) {
	t.Helper()
	if storetest.Selected(t).Name == "sqlite" {
		t.Parallel()
	}
}
