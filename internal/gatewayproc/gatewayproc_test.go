package gatewayproc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" {
				w.Write([]byte(`{"success":false,"message":"headers"}`))
				return
			}
			w.Write([]byte(`{"success":true,"message":"","data":{"id":7}}`))
		case "/refused":
			w.Write([]byte(`{"success":false,"message":"no"}`))
		case "/status":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"success":true}`))
		default:
			w.Write([]byte("<html>not json</html>"))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	var got struct{ ID int64 }
	if err := Call(ctx, srv.Client(), http.MethodPost, srv.URL+"/ok", "tok", map[string]any{"a": 1}, &got); err != nil || got.ID != 7 {
		t.Errorf("ok: err %v, id %d; want nil, 7", err, got.ID)
	}
	for path, want := range map[string]string{"/refused": "HTTP 200: no", "/status": "HTTP 401", "/html": "not the /api envelope"} {
		err := Call(ctx, srv.Client(), http.MethodGet, srv.URL+path, "", nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one with %q", path, err, want)
		}
	}
}

func TestAbbreviate(t *testing.T) {
	if got := Abbreviate([]byte("a\n  b\tc")); got != "a b c" {
		t.Errorf("Abbreviate joined %q", got)
	}
	long := strings.Repeat("é", 150) // 300 bytes: the cut falls inside a rune
	got := Abbreviate([]byte(long))
	if !strings.HasSuffix(got, "…") || len(got) > 200+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("Abbreviate(long) = %q", got)
	}
}
