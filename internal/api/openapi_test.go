package api_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

// GET /api/openapi.yaml serves docs/openapi.yaml as built in, to anyone.
func TestOpenAPIIsServed(t *testing.T) {
	e := apptest.New(t)
	want, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(e.URL() + "/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/yaml") || !bytes.Equal(got, want) {
		t.Fatalf("GET /api/openapi.yaml = %d %q, %d bytes (want %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(want))
	}
}
