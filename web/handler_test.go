package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func serve(t *testing.T, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

func TestHandlerServesFilesAndClientRoutes(t *testing.T) {
	tests := []struct {
		path, wantType string
		wantStatus     int
		wantBody       string
	}{
		{"/", "text/html; charset=utf-8", 200, `<div id="app">`},
		{"/keys", "text/html; charset=utf-8", 200, `<div id="app">`},
		{"/admin/users/7", "text/html; charset=utf-8", 200, `<div id="app">`},
		// A directory of the tree gets the app too, never a listing.
		{"/vendor/", "text/html; charset=utf-8", 200, `<div id="app">`},
		{"/js/main.js", "text/javascript; charset=utf-8", 200, "render("},
		{"/vendor/preact.mjs", "text/javascript; charset=utf-8", 200, "createElement"},
		{"/css/console.css", "text/css; charset=utf-8", 200, "--accent"},
		{"/vendor/LICENSE-preact", "text/plain; charset=utf-8", 200, "MIT"},
		{"/js/missing.js", "text/plain; charset=utf-8", 404, "404 page not found"},
		{"/favicon.ico", "text/plain; charset=utf-8", 404, "404 page not found"},
		// Go sources are not embedded.
		{"/handler.go", "text/plain; charset=utf-8", 404, "404 page not found"},
		{"/../js/main.js", "text/javascript; charset=utf-8", 200, "render("},
	}
	for _, tc := range tests {
		rec := serve(t, "GET", tc.path)
		if rec.Code != tc.wantStatus || rec.Header().Get("Content-Type") != tc.wantType || !strings.Contains(rec.Body.String(), tc.wantBody) {
			t.Errorf("GET %s = %d %q %.60q, want %d %q containing %q", tc.path, rec.Code,
				rec.Header().Get("Content-Type"), rec.Body.String(), tc.wantStatus, tc.wantType, tc.wantBody)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options = %q", tc.path, got)
		}
	}
}

func TestHandlerSecurityHeaders(t *testing.T) {
	rec := serve(t, "GET", "/")
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self' 'sha256-", "style-src 'self';", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	first := serve(t, "GET", "/js/main.js")
	etag := first.Header().Get("ETag")
	if etag == "" || first.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, first.Header().Get("Cache-Control"))
	}
	again := serve(t, "GET", "/js/main.js", "If-None-Match", etag)
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Errorf("revalidation = %d with %d bytes, want 304 and no body", again.Code, again.Body.Len())
	}
	if other := serve(t, "GET", "/js/api.js").Header().Get("ETag"); other == etag {
		t.Errorf("two files share the ETag %s", etag)
	}
}

func TestHandlerRefusesWrites(t *testing.T) {
	rec := serve(t, "POST", "/keys")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST = %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if head := serve(t, "HEAD", "/"); head.Code != 200 || head.Body.Len() != 0 {
		t.Errorf("HEAD = %d with %d bytes", head.Code, head.Body.Len())
	}
}

// The import map's hash in the CSP must be the hash of the map as it is in
// index.html, or the browser refuses it and no module loads.
func TestContentSecurityPolicyHashesTheImportMap(t *testing.T) {
	a := contentSecurityPolicy([]byte(`<script type="importmap">{"imports":{}}</script>`))
	b := contentSecurityPolicy([]byte(`<script type="importmap">{"imports":{"x":"/x"}}</script>`))
	none := contentSecurityPolicy([]byte(`<p>no map</p>`))
	if a == b || !strings.Contains(a, "'sha256-") || strings.Contains(none, "sha256") {
		t.Errorf("policies: %q / %q / %q", a, b, none)
	}
}
