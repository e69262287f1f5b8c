package fakecloud

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Azure's answers to a wrong key, an unknown api-version or deployment, as
// Azure OpenAI words them.
const (
	azureBadKey = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to " +
		"provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	azureNoVersion  = "Missing or invalid api-version query parameter."
	azureNoResource = "Resource not found"
	azureNoDeploy   = "The API deployment for this resource does not exist. If you created the deployment " +
		"within the last 5 minutes, please wait a moment and try again."
)

// Azure is a fake Azure OpenAI resource. It serves
//
//	POST /openai/deployments/{deployment}/{chat/completions|embeddings|images/generations}?api-version=DATE
//	POST /openai/responses?api-version=DATE            (deployment as "model")
//	POST /openai/v1/{chat/completions|responses|embeddings|images/generations}  (no api-version; model in body)
//
// and refuses, as Azure does, a request without the right "api-key" header
// (or with an Authorization header, which Azure would read as an Entra ID
// token) with 401, an unknown api-version with 404, an unknown deployment
// with 404 DeploymentNotFound. Accepted requests go to the backend's OpenAI
// endpoint with "model" set to the deployment.
type Azure struct {
	recorder
	// URL is the resource endpoint, a channel's base_url.
	URL string

	backend     *fakeupstream.Server
	backendKey  string
	key         string
	versions    []string
	deployments []string
}

// AzureVersions are the api-versions the fake accepts unless told
// otherwise.
var AzureVersions = []string{"2024-10-21", "2025-03-01-preview", "2025-04-01-preview"}

// NewAzure starts a resource that accepts key for the given deployments,
// forwarding to backend (which accepts backendKey).
func NewAzure(t testing.TB, backend *fakeupstream.Server, backendKey, key string, deployments ...string) *Azure {
	t.Helper()
	a := &Azure{backend: backend, backendKey: backendKey, key: key, versions: AzureVersions, deployments: deployments}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /openai/deployments/{deployment}/{op...}", a.deployment)
	mux.HandleFunc("POST /openai/responses", a.responses)
	mux.HandleFunc("POST /openai/v1/{op...}", a.v1)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		azureError(w, http.StatusNotFound, "404", azureNoResource)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func azureError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": message}})
}

// admit records the request and checks its key; false means it answered.
func (a *Azure) admit(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := readBody(w, r)
	a.record(r, body)
	if err != nil {
		azureError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return nil, false
	}
	if r.Header.Get("api-key") != a.key || r.Header.Get("Authorization") != "" {
		azureError(w, http.StatusUnauthorized, "401", azureBadKey)
		return nil, false
	}
	return body, true
}

var azureOps = []string{"chat/completions", "embeddings", "images/generations", "responses"}

func (a *Azure) deployment(w http.ResponseWriter, r *http.Request) {
	body, ok := a.admit(w, r)
	if !ok {
		return
	}
	op := r.PathValue("op")
	if !slices.Contains(a.versions, r.URL.Query().Get("api-version")) {
		azureError(w, http.StatusNotFound, "404", azureNoVersion)
		return
	}
	if op == "responses" || !slices.Contains(azureOps, op) {
		azureError(w, http.StatusNotFound, "404", azureNoResource)
		return
	}
	a.forward(w, r, op, r.PathValue("deployment"), body)
}

func (a *Azure) responses(w http.ResponseWriter, r *http.Request) {
	body, ok := a.admit(w, r)
	if !ok {
		return
	}
	if !slices.Contains(a.versions, r.URL.Query().Get("api-version")) {
		azureError(w, http.StatusNotFound, "404", azureNoVersion)
		return
	}
	a.forward(w, r, "responses", modelOf(body), body)
}

func (a *Azure) v1(w http.ResponseWriter, r *http.Request) {
	body, ok := a.admit(w, r)
	if !ok {
		return
	}
	op := r.PathValue("op")
	if r.URL.RawQuery != "" || !slices.Contains(azureOps, op) {
		azureError(w, http.StatusNotFound, "404", azureNoResource)
		return
	}
	a.forward(w, r, op, modelOf(body), body)
}

func modelOf(body []byte) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}

func (a *Azure) forward(w http.ResponseWriter, r *http.Request, op, deployment string, body []byte) {
	if !slices.Contains(a.deployments, deployment) {
		azureError(w, http.StatusNotFound, "DeploymentNotFound", azureNoDeploy)
		return
	}
	body, err := withMember(body, "model", deployment)
	if err != nil {
		azureError(w, http.StatusBadRequest, "BadRequest", "invalid JSON body")
		return
	}
	h := http.Header{"Authorization": {"Bearer " + a.backendKey}}
	resp, err := backendCall(r, a.backend, "/v1/"+op, h, body)
	if err != nil {
		azureError(w, http.StatusBadGateway, "BadGateway", err.Error())
		return
	}
	copyResponse(w, resp)
}
