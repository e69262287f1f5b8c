package docscheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// openAPIDoc is the part of docs/openapi.yaml the drift check reads.
type openAPIDoc struct {
	OpenAPI string                                 `yaml:"openapi"`
	Paths   map[string]map[string]openAPIOperation `yaml:"paths"`
}

type openAPIOperation struct {
	Summary   string                   `yaml:"summary"`
	Role      string                   `yaml:"x-role"`
	Security  []map[string][]string    `yaml:"security"`
	Responses map[string]yaml.Node     `yaml:"responses"`
	Params    []map[string]interface{} `yaml:"parameters"`
}

// openAPIKey is where a route pattern sits in the description: the path
// written in full ({$} is the trailing slash it matches), and the method.
func openAPIKey(pattern string) (path, method string) {
	method, path, _ = strings.Cut(pattern, " ")
	return strings.TrimSuffix(path, "{$}"), strings.ToLower(method)
}

// undescribed returns the /api patterns doc has no operation for, or one
// without a summary, a role or an answer.
func undescribed(patterns []string, doc openAPIDoc) []string {
	var missing []string
	for _, p := range patterns {
		path, method := openAPIKey(p)
		if !strings.HasPrefix(path, "/api/") || path == "/api/" {
			continue
		}
		op, ok := doc.Paths[path][method]
		if !ok || op.Summary == "" || op.Role == "" || op.Responses["200"].Kind == 0 {
			missing = append(missing, p)
		}
	}
	return missing
}

// TestEveryRouteIsInOpenAPI: docs/openapi.yaml is valid YAML, says OpenAPI
// 3.1, and describes every /api route registered in routes.go (and
// nothing that is not registered), with a summary, the least role and the
// envelope, so the description cannot drift from the server.
func TestEveryRouteIsInOpenAPI(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docs/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml does not parse: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	patterns := routePatterns(t, filepath.Join(root, "internal/api/routes.go"))
	if len(patterns) < 100 {
		t.Fatalf("found only %d /api route patterns", len(patterns))
	}
	for _, p := range undescribed(patterns, doc) {
		t.Errorf("internal/api/routes.go registers %q, which docs/openapi.yaml does not describe (summary, x-role, responses)", p)
	}
	registered := map[string]bool{}
	for _, p := range patterns {
		path, method := openAPIKey(p)
		registered[method+" "+path] = true
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if !registered[method+" "+path] {
				t.Errorf("docs/openapi.yaml describes %s %s, which routes.go does not register", method, path)
			}
			if op.Role != "Guest" && len(op.Security) == 0 {
				t.Errorf("%s %s: role %s without a security requirement", method, path, op.Role)
			}
			for _, name := range pathParams(path) {
				if !slices.ContainsFunc(op.Params, func(p map[string]interface{}) bool { return p["name"] == name && p["in"] == "path" }) {
					t.Errorf("%s %s: path parameter %s is not declared", method, path, name)
				}
			}
		}
	}
}

// pathParams are the {name} segments of a path.
func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.Trim(seg, "{}"))
		}
	}
	return out
}

// TestUndescribedRouteIsReported keeps the drift check itself honest: a
// route added without its entry is reported, one with it is not.
func TestUndescribedRouteIsReported(t *testing.T) {
	var ok yaml.Node
	if err := yaml.Unmarshal([]byte("description: x"), &ok); err != nil {
		t.Fatal(err)
	}
	doc := openAPIDoc{Paths: map[string]map[string]openAPIOperation{
		"/api/x/": {"get": {Summary: "list", Role: "Admin", Responses: map[string]yaml.Node{"200": ok}}},
	}}
	got := undescribed([]string{"GET /api/x/{$}", "POST /api/x/{$}", "GET /api/x/{id}"}, doc)
	if !slices.Equal(got, []string{"POST /api/x/{$}", "GET /api/x/{id}"}) {
		t.Fatalf("undescribed = %q", got)
	}
}
