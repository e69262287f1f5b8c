package h1

import (
	"net/http"
	"testing"
)

// The pool's key, built without allocating, is the scheme and the address
// the dial uses (canonicalAddr): default ports filled in, IPv6 hosts in
// brackets, a path or query ignored; the lookup by it allocates nothing.
func TestPoolKey(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"http://upstream.test/v1/chat/completions", "http://upstream.test:80"},
		{"https://api.example.com/v1/messages?beta=true", "https://api.example.com:443"},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"},
		{"https://[::1]/v1", "https://[::1]:443"},
		{"http://[2001:db8::1]:9000/x", "http://[2001:db8::1]:9000"},
		{"http://user:pass@host.test:81/", "http://host.test:81"},
	} {
		req, err := http.NewRequest(http.MethodPost, tt.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf [128]byte
		if got := string(poolKey(buf[:0], req)); got != tt.want || got != req.URL.Scheme+"://"+canonicalAddr(req) {
			t.Errorf("poolKey(%s) = %q, want %q (canonicalAddr %q)", tt.url, got, tt.want, canonicalAddr(req))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://upstream.test:8080/v1", nil)
	tr := &Transport{idle: map[string][]*conn{"http://upstream.test:8080": nil}}
	if n := testing.AllocsPerRun(100, func() {
		var buf [128]byte
		_ = tr.idle[string(poolKey(buf[:0], req))]
	}); n != 0 {
		t.Errorf("a pool lookup allocates %v times", n)
	}
}
