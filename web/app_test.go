package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// The console takes every path outside /api and /v1; those two keep their
// own answers for unknown paths.
func TestConsoleBesideTheAPIs(t *testing.T) {
	e := apptest.New(t)
	tests := []struct {
		path       string
		wantStatus int
		wantType   string
		wantBody   string
	}{
		{"/", 200, "text/html; charset=utf-8", `<script type="module" src="/js/main.js">`},
		{"/keys", 200, "text/html; charset=utf-8", `<div id="app">`},
		{"/api/nope", 404, "application/json; charset=utf-8", `"success":false`},
		{"/api/status", 200, "application/json; charset=utf-8", `"success":true`},
		{"/v1/models", 401, "application/json", `"error"`},
		{"/js/nope.js", 404, "text/plain; charset=utf-8", "404 page not found"},
	}
	for _, tc := range tests {
		resp, err := http.Get(e.Server.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType) || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s = %d %q %.80q, want %d %q containing %q", tc.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, tc.wantStatus, tc.wantType, tc.wantBody)
		}
	}
}
