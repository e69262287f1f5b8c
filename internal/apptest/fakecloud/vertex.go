package fakecloud

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Vertex is a fake Vertex AI regional endpoint. It serves
//
//	POST /v1/projects/{p}/locations/{r}/publishers/google/models/{m}:generateContent
//	POST …/publishers/google/models/{m}:streamGenerateContent?alt=sse
//	POST …/publishers/anthropic/models/{m}:rawPredict
//	POST …/publishers/anthropic/models/{m}:streamRawPredict
//
// The bearer token must be one the GoogleTokens fake granted and not yet
// expired (else 401 UNAUTHENTICATED), for an account of the path's project
// (else 403 PERMISSION_DENIED, IAM_PERMISSION_DENIED); the location must be
// the endpoint's region. Claude bodies must carry anthropic_version
// vertex-2023-10-16 and no "model". Gemini calls go to the backend's Gemini
// dialect, Claude calls to its Anthropic dialect; answers pass through, as
// Vertex returns the publishers' own formats.
type Vertex struct {
	recorder
	// URL is the endpoint, a channel's base_url.
	URL string

	tokens     *GoogleTokens
	backend    *fakeupstream.Server
	backendKey string
	region     string
}

// NewVertex starts an endpoint of region that accepts tokens of tokens'
// accounts, answering from backend (which accepts backendKey).
func NewVertex(t testing.TB, tokens *GoogleTokens, backend *fakeupstream.Server, backendKey, region string) *Vertex {
	t.Helper()
	v := &Vertex{tokens: tokens, backend: backend, backendKey: backendKey, region: region}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{call}", v.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server.", "")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	v.URL = srv.URL
	return v
}

func googleError(w http.ResponseWriter, status int, code, message, reason string) {
	e := map[string]any{"code": status, "message": message, "status": code}
	if reason != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com"}}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (v *Vertex) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	v.record(r, body)
	if err != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error(), "")
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	account, valid := v.tokens.check(token)
	if !ok || !valid {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. "+
			"Expected OAuth 2 access token, login cookie or other valid authentication credential.", "ACCESS_TOKEN_TYPE_UNSUPPORTED")
		return
	}
	if r.PathValue("project") != account.project {
		googleError(w, http.StatusForbidden, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' denied on resource "+
			"'//aiplatform.googleapis.com/projects/"+r.PathValue("project")+"' (or it may not exist).", "IAM_PERMISSION_DENIED")
		return
	}
	if r.PathValue("region") != v.region {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Location "+r.PathValue("region")+" does not match the endpoint's region "+v.region+".", "")
		return
	}
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	switch r.PathValue("publisher") + ":" + method {
	case "google:generateContent", "google:streamGenerateContent":
		path := "/v1beta/models/" + model + ":" + method
		if r.URL.RawQuery != "" {
			path += "?" + r.URL.RawQuery
		}
		resp, err := backendCall(r, v.backend, path, http.Header{"X-Goog-Api-Key": {v.backendKey}}, body)
		if err != nil {
			googleError(w, http.StatusInternalServerError, "INTERNAL", err.Error(), "")
			return
		}
		copyResponse(w, resp)
	case "anthropic:rawPredict", "anthropic:streamRawPredict":
		v.claude(w, r, model, method == "streamRawPredict", body)
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "Publisher Model `"+r.PathValue("call")+"` not found.", "")
	}
}

func (v *Vertex) claude(w http.ResponseWriter, r *http.Request, model string, stream bool, body []byte) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.", "")
		return
	}
	if string(m["anthropic_version"]) != `"vertex-2023-10-16"` {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]string{
			"type": "invalid_request_error", "message": "anthropic_version: Input should be 'vertex-2023-10-16'"}})
		return
	}
	if _, ok := m["model"]; ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]string{
			"type": "invalid_request_error", "message": "model: Extra inputs are not permitted"}})
		return
	}
	if stream != (string(m["stream"]) == "true") {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "stream must match the method (streamRawPredict takes \"stream\": true).", "")
		return
	}
	delete(m, "anthropic_version")
	m["model"], _ = json.Marshal(model)
	fwd, _ := json.Marshal(m)
	h := http.Header{"X-Api-Key": {v.backendKey}, "Anthropic-Version": {"2023-06-01"}}
	resp, err := backendCall(r, v.backend, "/v1/messages", h, fwd)
	if err != nil {
		googleError(w, http.StatusInternalServerError, "INTERNAL", err.Error(), "")
		return
	}
	copyResponse(w, resp)
}
