package relay_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// TestHeadersTheLogCannotHoldAreCleaned pins issue 6: an X-Session-Key or
// X-Request-Id with invalid UTF-8, or longer than its column, was answered
// 200 and then failed its settlement on PostgreSQL and MySQL, so the call
// was never billed and every later call of every user answered 500. Such
// calls are served and billed; the log keeps the session key cleaned (bad
// bytes and control characters dropped, cut to 128 characters) and a new
// request id in place of a bad one.
func TestHeadersTheLogCannotHoldAreCleaned(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	const want = 88 // 12 × 2 + 8 × 8
	generated := regexp.MustCompile(`^[0-9a-f]{24}$`)
	long := strings.Repeat("会", 200) // 200 characters into a 128-character column
	for _, tc := range []struct {
		name, session, requestID string
		wantSession              string
		keepsID                  bool
	}{
		{"invalid UTF-8", "sess-\xff\xfe-1", "req-\xff\xfe", "sess--1", false},
		{"session key over its column", "s-" + long, "req-long-session", "s-" + strings.Repeat("会", 126), true},
		{"tab and obs-text", "a\tb\x80c", strings.Repeat("r", 65), "abc", false},
		{"unicode kept", "会话-1", "请求-1", "会话-1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, n := g.Accounts(), len(g.ConsumeLogs())
			r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false),
				"X-Session-Key", tc.session, "X-Request-Id", tc.requestID)
			if r.Status != http.StatusOK {
				t.Fatalf("call: %d %s", r.Status, r.Body)
			}
			l := checkBilled(t, g, before, n, want)
			if l.SessionKey != tc.wantSession {
				t.Errorf("session_key %q, want %q", l.SessionKey, tc.wantSession)
			}
			answered := r.Header.Get("X-Request-Id")
			if l.RequestID != answered {
				t.Errorf("log request_id %q, answered X-Request-Id %q", l.RequestID, answered)
			}
			if tc.keepsID && answered != tc.requestID {
				t.Errorf("X-Request-Id %q, want the caller's %q", answered, tc.requestID)
			}
			if !tc.keepsID && !generated.MatchString(answered) {
				t.Errorf("X-Request-Id %q, want a generated id", answered)
			}
		})
	}

	// Another user's calls go on being served and billed.
	other, otherID := e.NewUser("other", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": otherID, "quota": 1_000_000})
	key := other.CreateToken(map[string]any{"name": "other", "unlimited_quota": true}).Key
	r := e.Call(key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false))
	if r.Status != http.StatusOK {
		t.Fatalf("another user's call: %d %s", r.Status, r.Body)
	}
	if got := g.Quota(otherID); got != 1_000_000-want {
		t.Errorf("other user's balance %d, want %d", got, 1_000_000-want)
	}
}

// TestRefusedKeyWithLongMessageDisablesTheChannel: the upstream's answer to
// a refused key is kept as the channel's last error, cut to 2 KiB. A cut
// inside a character left invalid UTF-8, which PostgreSQL refused, so the
// channel stayed enabled and kept being tried. The stored error is cut at a
// character.
func TestRefusedKeyWithLongMessageDisablesTheChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	msg := strings.Repeat("密钥无效", 400) // 4,800 bytes: a 2 KiB cut falls inside some character
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusUnauthorized, ErrorMessage: msg})
	wantReply(t, f.chat(""), "up1")
	ch := f.g.ChannelState(f.ids[0])
	if ch.Status != 3 || !strings.Contains(ch.LastError, "密钥无效密钥无效") || strings.ContainsRune(ch.LastError, utf8.RuneError) {
		t.Fatalf("want status 3 with the upstream's message cut at a character; got status %d, last_error %q", ch.Status, ch.LastError)
	}
}
