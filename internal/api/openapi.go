package api

import (
	"net/http"

	"github.com/modelgate/modelgate/docs"
)

// openAPI serves docs/openapi.yaml, the machine-readable description of
// every /api route (issue 30 §5), as it was built into the binary.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, err := w.Write(docs.OpenAPI)
	return err
}
