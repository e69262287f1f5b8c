package azure_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/azure"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

func TestParseAPIVersion(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", azure.DefaultAPIVersion, true},
		{" 2024-10-21 ", "2024-10-21", true},
		{"2025-03-01-preview", "2025-03-01-preview", true},
		{"v1", "v1", true},
		{"V1", "", false},
		{"2024-13-01", "", false},
		{"2024-02-30", "", false},
		{"2024-10-21-beta", "", false},
		{"2024-10-21&x=1", "", false},
		{"latest", "", false},
		{"2024-10-21\x00", "", false},
	} {
		got, err := azure.ParseAPIVersion(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseAPIVersion(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestURL(t *testing.T) {
	dated, err := azure.New("https://res.openai.azure.com/", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := azure.New("https://res.openai.azure.com", "k", "v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c          *azure.Channel
		e          azure.Endpoint
		deployment string
		want       string
	}{
		{dated, azure.Chat, "gpt-4o", "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"},
		{dated, azure.Embeddings, "emb", "https://res.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21"},
		{dated, azure.Images, "dall e/3", "https://res.openai.azure.com/openai/deployments/dall%20e%2F3/images/generations?api-version=2024-10-21"},
		{dated, azure.Responses, "gpt-4o", "https://res.openai.azure.com/openai/responses?api-version=2024-10-21"},
		{v1, azure.Chat, "gpt-4o", "https://res.openai.azure.com/openai/v1/chat/completions"},
		{v1, azure.Responses, "gpt-4o", "https://res.openai.azure.com/openai/v1/responses"},
	} {
		got, err := tc.c.URL(tc.e, tc.deployment)
		if err != nil || got != tc.want {
			t.Errorf("URL(%d, %q) = %q, %v; want %q", tc.e, tc.deployment, got, err, tc.want)
		}
	}
	if _, err := dated.URL(azure.Chat, ""); err == nil {
		t.Error("empty deployment accepted")
	}
}

func TestNewRefusesBadFields(t *testing.T) {
	for _, tc := range []struct{ base, key, other string }{
		{"res.openai.azure.com", "k", ""},
		{"ftp://res", "k", ""},
		{"https://res?x=1", "k", ""},
		{"https://res", "", ""},
		{"https://res", "a b", ""},
		{"https://res", "k\n", "2024-1-1"},
	} {
		if _, err := azure.New(tc.base, tc.key, tc.other); err == nil {
			t.Errorf("New(%q, %q, %q) accepted", tc.base, tc.key, tc.other)
		}
	}
}

// call sends body to the fake and returns the status and answer.
func call(t *testing.T, c *azure.Channel, e azure.Endpoint, deployment, body string) (int, []byte) {
	t.Helper()
	req, err := c.NewRequest(context.Background(), e, deployment, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Authorization") != "" {
		t.Fatal("Authorization header set")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestAgainstFake(t *testing.T) {
	backend := fakeupstream.New(t)
	fake := fakecloud.NewAzure(t, backend, fakeupstream.DefaultKey, "azure-key-1", "gpt-4o", "emb")
	dated, _ := azure.New(fake.URL, "azure-key-1", "2025-03-01-preview")
	v1, _ := azure.New(fake.URL, "azure-key-1", "v1")

	t.Run("chat on a dated version keeps the body's bytes", func(t *testing.T) {
		body := `{"messages":[{"role":"user","content":"hi"}],  "model":"client-name"}`
		status, b := call(t, dated, azure.Chat, "gpt-4o", body)
		if status != 200 || !strings.Contains(string(b), fakeupstream.DefaultReply) {
			t.Fatalf("status %d: %s", status, b)
		}
		got := fake.LastRequest(t)
		if string(got.Body) != body || got.Header.Get("api-key") != "azure-key-1" || got.RawQuery != "api-version=2025-03-01-preview" {
			t.Fatalf("sent %s %q %q", got.Body, got.Header.Get("api-key"), got.RawQuery)
		}
		if backend.LastRequest().Model != "gpt-4o" {
			t.Fatalf("backend saw model %q", backend.LastRequest().Model)
		}
	})
	t.Run("stream", func(t *testing.T) {
		status, b := call(t, dated, azure.Chat, "gpt-4o", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
		if status != 200 || !strings.Contains(string(b), "data: [DONE]") {
			t.Fatalf("status %d: %s", status, b)
		}
	})
	t.Run("responses on a dated version names the deployment as model", func(t *testing.T) {
		status, b := call(t, dated, azure.Responses, "gpt-4o", `{"model":"alias","input":"hi"}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		got := fake.LastRequest(t)
		if got.Path != "/openai/responses" || string(got.Body) != `{"model":"gpt-4o","input":"hi"}` {
			t.Fatalf("sent %s %s", got.Path, got.Body)
		}
	})
	t.Run("v1 puts the model in the body and sends no api-version", func(t *testing.T) {
		status, b := call(t, v1, azure.Chat, "gpt-4o", `{"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		got := fake.LastRequest(t)
		if got.Path != "/openai/v1/chat/completions" || got.RawQuery != "" || modelOf(got.Body) != "gpt-4o" {
			t.Fatalf("sent %s?%s %s", got.Path, got.RawQuery, got.Body)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		status, b := call(t, dated, azure.Embeddings, "emb", `{"input":"hi"}`)
		if status != 200 || !strings.Contains(string(b), "embedding") {
			t.Fatalf("status %d: %s", status, b)
		}
	})
	t.Run("a wrong key is refused and classified as the key", func(t *testing.T) {
		wrong, _ := azure.New(fake.URL, "azure-key-2", "")
		n := backend.Count()
		status, b := call(t, wrong, azure.Chat, "gpt-4o", `{"messages":[]}`)
		if status != 401 || azure.Classify(status, b).Kind != refusal.Key {
			t.Fatalf("status %d: %s", status, b)
		}
		if backend.Count() != n {
			t.Fatal("a refused request reached the backend")
		}
	})
	t.Run("an api-version Azure does not serve is the request's fault", func(t *testing.T) {
		old, _ := azure.New(fake.URL, "azure-key-1", "2022-12-01")
		status, b := call(t, old, azure.Chat, "gpt-4o", `{"messages":[]}`)
		if status != 404 || azure.Classify(status, b).Kind != refusal.Request {
			t.Fatalf("status %d: %s", status, b)
		}
	})
	t.Run("unknown deployment", func(t *testing.T) {
		status, b := call(t, dated, azure.Chat, "gpt-5", `{"messages":[]}`)
		e := azure.Classify(status, b)
		if status != 404 || e.Code != "DeploymentNotFound" || e.Kind != refusal.Request {
			t.Fatalf("status %d: %s", status, b)
		}
	})
	t.Run("invalid UTF-8 is refused before sending", func(t *testing.T) {
		n := len(fake.Requests())
		if _, err := v1.NewRequest(context.Background(), azure.Chat, "gpt-4o", []byte("{\"input\":\"\xff\"}")); err == nil {
			t.Fatal("invalid UTF-8 accepted")
		}
		if len(fake.Requests()) != n {
			t.Fatal("sent")
		}
	})
}

func modelOf(body []byte) string {
	var b struct{ Model string }
	_ = json.Unmarshal(body, &b)
	return b.Model
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   refusal.Kind
	}{
		{401, `{"error":{"code":"401","message":"Access denied"}}`, refusal.Key},
		{403, `{"error":{"code":"AuthenticationTypeDisabled","message":"Key based authentication is disabled"}}`, refusal.Key},
		{403, `{"error":{"code":"content_filter","message":"filtered"}}`, refusal.Request},
		{429, `{"error":{"code":"429","message":"Rate limit"}}`, refusal.Throttled},
		{400, `{"error":{"code":"context_length_exceeded","message":"too long"}}`, refusal.Request},
		{500, `not json`, refusal.Upstream},
		{503, ``, refusal.Upstream},
	} {
		if got := azure.Classify(tc.status, []byte(tc.body)).Kind; got != tc.want {
			t.Errorf("Classify(%d, %s) = %v, want %v", tc.status, tc.body, got, tc.want)
		}
	}
}
