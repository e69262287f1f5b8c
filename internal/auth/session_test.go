package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/auth"
)

const secret = "test-secret-0123456789"

var b64 = base64.RawURLEncoding

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// issue runs Issue on req and returns the cookie it set.
func issue(t *testing.T, s *auth.Sessions, req *http.Request, userID, version int64) *http.Cookie {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Issue(rec, req, userID, version)
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != auth.CookieName {
		t.Fatalf("Issue set cookies %v; want one %s", cookies, auth.CookieName)
	}
	return cookies[0]
}

func withCookie(value string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/api/user/self", nil)
	req.AddCookie(&http.Cookie{Name: auth.CookieName, Value: value})
	return req
}

// sign builds a cookie value by hand. It pins the wire format: if this test
// helper and the package disagree, live cookies would stop working.
func sign(key, payload string) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte("modelgate-session-v1\x00" + payload))
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(h.Sum(nil))
}

func TestSessionRoundTrip(t *testing.T) {
	s := auth.NewSessions(secret, time.Hour)
	before := time.Now().Unix()
	c := issue(t, s, httptest.NewRequest(http.MethodPost, "/api/user/login", nil), 42, 7)

	got, ok := s.Read(withCookie(c.Value), time.Now())
	if !ok {
		t.Fatal("Read of a fresh cookie failed")
	}
	if got.UserID != 42 || got.Version != 7 {
		t.Errorf("Read = %+v; want UserID 42, Version 7", got)
	}
	if got.IssuedAt < before || got.ExpiresAt-got.IssuedAt != 3600 {
		t.Errorf("Read = %+v; want issued now, expiring an hour later", got)
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	proxied := httptest.NewRequest(http.MethodPost, "/", nil)
	proxied.Header.Set("X-Forwarded-Proto", "HTTPS, http")
	tests := []struct {
		name   string
		ttl    time.Duration
		req    *http.Request
		maxAge int
		secure bool
	}{
		{"plain http", time.Hour, httptest.NewRequest(http.MethodPost, "/", nil), 3600, false},
		{"direct tls", time.Hour, httptest.NewRequest(http.MethodPost, "https://gw.example/", nil), 3600, true},
		{"behind tls proxy", time.Hour, proxied, 3600, true},
		{"default ttl", 0, httptest.NewRequest(http.MethodPost, "/", nil), 30 * 24 * 3600, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := issue(t, auth.NewSessions(secret, tt.ttl), tt.req, 1, 1)
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
				t.Errorf("HttpOnly=%v SameSite=%v Path=%q; want true, Lax, /", c.HttpOnly, c.SameSite, c.Path)
			}
			if c.MaxAge != tt.maxAge || c.Secure != tt.secure {
				t.Errorf("MaxAge=%d Secure=%v; want %d, %v", c.MaxAge, c.Secure, tt.maxAge, tt.secure)
			}
		})
	}
}

func TestSessionClear(t *testing.T) {
	rec := httptest.NewRecorder()
	auth.NewSessions(secret, 0).Clear(rec)
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != auth.CookieName || cookies[0].Value != "" || cookies[0].MaxAge >= 0 || cookies[0].Path != "/" {
		t.Fatalf("Clear set %v; want %s emptied with Max-Age=0 at /", cookies, auth.CookieName)
	}
}

func TestSessionRejects(t *testing.T) {
	s := auth.NewSessions(secret, time.Hour)
	valid := issue(t, s, httptest.NewRequest(http.MethodPost, "/", nil), 42, 7).Value
	p64, m64, _ := strings.Cut(valid, ".")
	payload, _ := b64.DecodeString(p64)
	mac, _ := b64.DecodeString(m64)

	forged := "1" + strings.TrimPrefix(string(payload), "42")
	flipped := append([]byte(nil), mac...)
	flipped[0] ^= 1
	exp := time.Now().Add(time.Hour).Unix()
	other := auth.NewSessions("another-secret", time.Hour)
	otherValue := issue(t, other, httptest.NewRequest(http.MethodPost, "/", nil), 42, 7).Value

	tests := []struct{ name, value string }{
		{"empty", ""},
		{"no dot", "abc"},
		{"three parts", "a.b.c"},
		{"not base64", "!!!.###"},
		{"padded base64", p64 + "=." + m64},
		{"payload only", p64 + "."},
		{"mac only", "." + m64},
		{"too long", strings.Repeat("A", 5000) + "." + m64},
		{"tampered payload", b64.EncodeToString([]byte(forged)) + "." + m64},
		{"tampered mac", p64 + "." + b64.EncodeToString(flipped)},
		{"truncated mac", p64 + "." + b64.EncodeToString(mac[:16])},
		{"wrong secret", otherValue},
		{"no domain prefix", func() string {
			h := hmac.New(sha256.New, []byte(secret))
			h.Write(payload)
			return p64 + "." + b64.EncodeToString(h.Sum(nil))
		}()},
		{"signed, three fields", sign(secret, "42.7.1")},
		{"signed, five fields", sign(secret, "42.7.1.2.3")},
		{"signed, not numbers", sign(secret, "a.b.c.d")},
		{"signed, empty", sign(secret, "")},
		{"signed, user 0", sign(secret, "0.7.1."+itoa(exp))},
		{"signed, expires before issue", sign(secret, "42.7."+itoa(exp+1)+"."+itoa(exp))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := s.Read(withCookie(tt.value), time.Now()); ok {
				t.Errorf("Read(%q) = %+v, true; want rejected", tt.value, got)
			}
		})
	}
	// The control: the value the rejections were derived from, and the hand
	// signed format, are accepted.
	for _, v := range []string{valid, sign(secret, "42.7.1."+itoa(exp))} {
		if _, ok := s.Read(withCookie(v), time.Now()); !ok {
			t.Errorf("Read(%q) rejected; want accepted", v)
		}
	}
	if _, ok := s.Read(httptest.NewRequest(http.MethodGet, "/", nil), time.Now()); ok {
		t.Error("Read without a cookie succeeded")
	}
}

func TestSessionExpiry(t *testing.T) {
	s := auth.NewSessions(secret, time.Hour)
	c := issue(t, s, httptest.NewRequest(http.MethodPost, "/", nil), 42, 7)
	sess, _ := s.Read(withCookie(c.Value), time.Now())
	exp := time.Unix(sess.ExpiresAt, 0)
	if _, ok := s.Read(withCookie(c.Value), exp.Add(-time.Second)); !ok {
		t.Error("rejected one second before expiry")
	}
	if _, ok := s.Read(withCookie(c.Value), exp); ok {
		t.Error("accepted at expiry")
	}
}

// Stateless: a second process with the same secret accepts the first's cookies.
func TestSessionsShareSecret(t *testing.T) {
	a, b := auth.NewSessions(secret, time.Hour), auth.NewSessions(secret, 2*time.Hour)
	c := issue(t, a, httptest.NewRequest(http.MethodPost, "/", nil), 9, 3)
	if got, ok := b.Read(withCookie(c.Value), time.Now()); !ok || got.UserID != 9 || got.Version != 3 {
		t.Errorf("b.Read(a's cookie) = %+v, %v; want user 9 version 3", got, ok)
	}
}

// A stale cookie of the same name (say, from an old path) sent first must not
// hide the valid one.
func TestSessionReadSkipsInvalidDuplicate(t *testing.T) {
	s := auth.NewSessions(secret, time.Hour)
	c := issue(t, s, httptest.NewRequest(http.MethodPost, "/", nil), 5, 1)
	req := withCookie("stale.value")
	req.AddCookie(&http.Cookie{Name: auth.CookieName, Value: c.Value})
	if got, ok := s.Read(req, time.Now()); !ok || got.UserID != 5 {
		t.Errorf("Read = %+v, %v; want user 5", got, ok)
	}
}

func TestNewSessionsEmptySecretPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewSessions(\"\") did not panic")
		}
	}()
	auth.NewSessions("", 0)
}

func TestSessionsConcurrent(t *testing.T) {
	s := auth.NewSessions(secret, time.Hour)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				rec := httptest.NewRecorder()
				s.Issue(rec, httptest.NewRequest(http.MethodPost, "/", nil), int64(i+1), int64(j))
				v := rec.Result().Cookies()[0].Value
				if got, ok := s.Read(withCookie(v), time.Now()); !ok || got.UserID != int64(i+1) {
					t.Errorf("Read = %+v, %v", got, ok)
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzSessionRead(f *testing.F) {
	s := auth.NewSessions(secret, time.Hour)
	for _, seed := range []string{"", ".", "a.b.c", "!!!.###", sign(secret, "1.1.1.99999999999"), sign(secret, "x")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Cookie", auth.CookieName+"="+v)
		s.Read(req, time.Now()) // must not panic
	})
}
