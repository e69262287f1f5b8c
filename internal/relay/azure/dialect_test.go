package azure

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/dialect"
)

func bind(t *testing.T, other string) Dialect {
	t.Helper()
	d, err := Dialect{}.Bind("https://r.openai.azure.com/", "k", other)
	if err != nil {
		t.Fatal(err)
	}
	return d.(Dialect)
}

func TestDialectNativeURL(t *testing.T) {
	dated, v1 := bind(t, ""), bind(t, "v1")
	for _, tc := range []struct {
		d          Dialect
		path, want string
	}{
		{dated, "/v1/chat/completions", "https://r.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2024-10-21"},
		{dated, "/v1/embeddings", "https://r.openai.azure.com/openai/deployments/dep/embeddings?api-version=2024-10-21"},
		{dated, "/v1/images/generations", "https://r.openai.azure.com/openai/deployments/dep/images/generations?api-version=2024-10-21"},
		{dated, "/v1/responses", "https://r.openai.azure.com/openai/responses?api-version=2024-10-21"},
		{dated, "/v1/audio/transcriptions", "https://r.openai.azure.com/openai/deployments/dep/audio/transcriptions?api-version=2024-10-21"},
		{v1, "/v1/chat/completions", "https://r.openai.azure.com/openai/v1/chat/completions"},
		{v1, "/v1/responses", "https://r.openai.azure.com/openai/v1/responses"},
		{v1, "/v1/completions", "https://r.openai.azure.com/openai/v1/completions"},
	} {
		if got := tc.d.NativeURL("ignored", tc.path, "dep", false); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.d.ch.apiVersion, tc.path, got, tc.want)
		}
	}
	// A deployment name cannot leave its path segment.
	if got := dated.NativeURL("", "/v1/audio/speech", "../x?y", false); got != "https://r.openai.azure.com/openai/deployments/..%2Fx%3Fy/audio/speech?api-version=2024-10-21" {
		t.Errorf("escaped deployment: %s", got)
	}
}

func TestDialectCredentials(t *testing.T) {
	d := bind(t, "")
	req, _ := http.NewRequest("POST", "https://r.openai.azure.com/x", nil)
	req.Header.Set("Authorization", "Bearer client")
	// The attempt's key (a key pool's) is sent; without one, the bound key.
	if err := d.Authorize(req, "k2", nil); err != nil || req.Header.Get("Api-Key") != "k2" || req.Header.Get("Authorization") != "" {
		t.Errorf("authorize: %v %v", err, req.Header)
	}
	if err := d.Authorize(req, "", nil); err != nil || req.Header.Get("Api-Key") != "k" {
		t.Errorf("authorize with the bound key: %v %v", err, req.Header)
	}
	if err := (Dialect{}).Authorize(req, "k", nil); err == nil {
		t.Error("an unbound dialect authorized a request")
	}
	if _, err := (Dialect{}).Bind("https://r.openai.azure.com", "k", "2024-02-30"); err == nil {
		t.Error("bound with an impossible date")
	}
	for _, tc := range []struct {
		status int
		body   string
		want   bool
	}{
		{403, `{"error":{"code":"PermissionDenied","message":"x"}}`, true},
		{403, `{"error":{"code":"content_filter","message":"x"}}`, false},
		{404, `{"error":{"code":"DeploymentNotFound","message":"x"}}`, false},
	} {
		if got := d.KeyRefused(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%d %s: key refused %v", tc.status, tc.body, got)
		}
	}
}

var _ dialect.Dialect = Dialect{}
