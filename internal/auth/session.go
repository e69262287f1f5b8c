package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CookieName is the name of the session cookie.
const CookieName = "modelgate_session"

// DefaultSessionTTL is the session lifetime when NewSessions is given none.
const DefaultSessionTTL = 30 * 24 * time.Hour

// macDomain is mixed into every MAC so that a MAC made with the same secret
// for another purpose (or a future cookie format) never verifies as a session.
// Changing the format means changing this string.
const macDomain = "modelgate-session-v1"

// maxCookieLen bounds the work Read does on hostile input; a real cookie is
// well under 150 bytes.
const maxCookieLen = 512

// b64 is strict so that each payload has exactly one encoding.
var b64 = base64.RawURLEncoding.Strict()

// Session is what a valid cookie proves. Times are unix seconds.
type Session struct {
	UserID int64
	// Version is the user's session_version when the cookie was issued. The
	// caller compares it with the stored row, so bumping the row (password
	// change, forced logout) ends every older session without server state.
	Version   int64
	IssuedAt  int64
	ExpiresAt int64
}

// Sessions issues and verifies session cookies. It keeps no state beyond its
// key, so every process configured with the same secret accepts the cookies
// of every other.
type Sessions struct {
	key []byte
	ttl time.Duration
}

// NewSessions returns Sessions signing with secret. A ttl of zero (or less)
// means DefaultSessionTTL. An empty secret panics: it would let anyone forge
// a session, and config always supplies one, so it is a wiring bug.
func NewSessions(secret string, ttl time.Duration) *Sessions {
	if secret == "" {
		panic("auth: empty session secret")
	}
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &Sessions{key: []byte(secret), ttl: ttl}
}

// Issue sets a session cookie for userID at the given session version.
func (s *Sessions) Issue(w http.ResponseWriter, r *http.Request, userID, version int64) {
	now := time.Now()
	sess := Session{UserID: userID, Version: version, IssuedAt: now.Unix(), ExpiresAt: now.Add(s.ttl).Unix()}
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    s.encode(sess),
		Path:     "/",
		MaxAge:   int(s.ttl / time.Second),
		HttpOnly: true,
		Secure:   isHTTPS(r),
		// Lax, not Strict: a link from elsewhere to the console should arrive
		// logged in, while cross-site POSTs still go without the cookie.
		SameSite: http.SameSiteLaxMode,
	})
}

// Read returns the session carried by r if its cookie is authentic and not
// expired at now. Any other input, however malformed, gives false.
func (s *Sessions) Read(r *http.Request, now time.Time) (Session, bool) {
	// Look at every cookie of that name: a stale one set under another path
	// or domain must not hide a valid one.
	for _, c := range r.CookiesNamed(CookieName) {
		if sess, ok := s.decode(c.Value); ok && now.Unix() < sess.ExpiresAt {
			return sess, true
		}
	}
	return Session{}, false
}

// Clear tells the browser to drop the session cookie. The cookie itself stays
// valid until it expires; ending it everywhere is done by bumping the user's
// session version.
func (s *Sessions) Clear(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
}

// encode renders sess as base64url(payload) "." base64url(MAC), where the
// payload is "uid.version.iat.exp" in decimal.
func (s *Sessions) encode(sess Session) string {
	payload := fmt.Appendf(nil, "%d.%d.%d.%d", sess.UserID, sess.Version, sess.IssuedAt, sess.ExpiresAt)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(s.mac(payload))
}

// decode verifies the MAC before looking inside the payload, so nothing an
// attacker wrote is parsed unless it was signed with our key.
func (s *Sessions) decode(value string) (Session, bool) {
	if len(value) > maxCookieLen {
		return Session{}, false
	}
	p64, m64, ok := strings.Cut(value, ".")
	if !ok {
		return Session{}, false
	}
	payload, err := b64.DecodeString(p64)
	if err != nil {
		return Session{}, false
	}
	mac, err := b64.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, s.mac(payload)) {
		return Session{}, false
	}
	var f [4]int64
	parts := strings.Split(string(payload), ".")
	if len(parts) != len(f) {
		return Session{}, false
	}
	for i, p := range parts {
		if f[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return Session{}, false
		}
	}
	sess := Session{UserID: f[0], Version: f[1], IssuedAt: f[2], ExpiresAt: f[3]}
	if sess.UserID <= 0 || sess.ExpiresAt < sess.IssuedAt {
		return Session{}, false
	}
	return sess, true
}

func (s *Sessions) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(macDomain))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum(nil)
}

// isHTTPS reports whether the client reached us over TLS, directly or through
// a TLS-terminating proxy. Trusting X-Forwarded-Proto is safe here: a forged
// value only makes the cookie stricter for the client that forged it.
func isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	// Proxy chains append: the first value is what the client used.
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}
