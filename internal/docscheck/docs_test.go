package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module root, two levels above this package.
const root = "../.."

// routeFiles register every route of the server; the route list is read
// from their source, so a route added there must be documented.
var routeFiles = []string{"internal/api/routes.go", "internal/relay/routes.go"}

// registrars are the calls whose first string argument is a route pattern:
// Server.handle and Server.internal (the routes nodes call) in
// internal/api, ServeMux.Handle and HandleFunc in the relay.
var registrars = []string{"handle", "internal", "Handle", "HandleFunc"}

// patternShape is a ServeMux pattern: an optional method, then a path.
var patternShape = regexp.MustCompile(`^([A-Z]+ )?/`)

// routePatterns parses a Go file and returns the patterns it registers.
func routePatterns(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.CompositeLit); ok {
			// A relay endpoint is served as POST at its path (Handler).
			if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "endpoint" {
				if p := stringField(lit, "path"); p != "" {
					out = append(out, "POST "+p)
				}
			}
			return true
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !slices.Contains(registrars, sel.Sel.Name) {
			return true
		}
		for i, arg := range call.Args {
			lit, ok := arg.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			p, err := strconv.Unquote(lit.Value)
			if err == nil && patternShape.MatchString(p) {
				// only(http.MethodGet, …) registers a method-less
				// pattern for one method.
				if m := onlyMethod(call.Args[i+1:]); m != "" {
					p = m + " " + p
				}
				out = append(out, p)
			}
			break
		}
		return true
	})
	return out
}

// stringField is the string literal given to key in a keyed composite
// literal, or "".
func stringField(lit *ast.CompositeLit, key string) string {
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == key {
			if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.STRING {
				s, _ := strconv.Unquote(v.Value)
				return s
			}
		}
	}
	return ""
}

// onlyMethod is the method of an only(http.MethodX, …) handler among args.
func onlyMethod(args []ast.Expr) string {
	for _, a := range args {
		call, ok := a.(*ast.CallExpr)
		if !ok {
			continue
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "only" || len(call.Args) == 0 {
			continue
		}
		if sel, ok := call.Args[0].(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Method") {
			return strings.ToUpper(strings.TrimPrefix(sel.Sel.Name, "Method"))
		}
	}
	return ""
}

// undocumented returns the patterns doc does not show as code (`pattern`).
func undocumented(patterns []string, doc string) []string {
	var missing []string
	for _, p := range patterns {
		if !strings.Contains(doc, "`"+p+"`") {
			missing = append(missing, p)
		}
	}
	return missing
}

func TestEveryRouteIsInAPIReference(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/api.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range routeFiles {
		patterns := routePatterns(t, filepath.Join(root, file))
		// A parse that finds (almost) nothing would pass vacuously.
		if len(patterns) < 10 {
			t.Fatalf("%s: found only %d route patterns (%q): has the registration changed shape?", file, len(patterns), patterns)
		}
		for _, p := range undocumented(patterns, string(doc)) {
			t.Errorf("%s registers %q, which docs/api.md does not show (write it as `%s`)", file, p, p)
		}
	}
}

// TestUndocumentedRouteIsReported keeps the check itself honest.
func TestUndocumentedRouteIsReported(t *testing.T) {
	got := undocumented([]string{"GET /api/x/{$}", "GET /api/x/{id}"}, "see `GET /api/x/{id}` and GET /api/x/{$}")
	if !slices.Equal(got, []string{"GET /api/x/{$}"}) {
		t.Fatalf("undocumented = %q", got)
	}
}

// outsideRefs are references to files a clone of the repository does not
// have: the shared workspace, the design and style notes and the spec file.
// They are built from parts so this file does not match itself.
var outsideRefs = []string{
	"../" + "shared", "/work/" + "shared", "DESIGN" + " §", "DESIGN" + ".md", "STYLE" + ".md",
	"deps" + ".md", "spec/" + "management-api",
}

func TestNoReferenceOutsideRepository(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "data" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, ".md") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(body), "\n") {
			for _, ref := range outsideRefs {
				if strings.Contains(line, ref) {
					t.Errorf("%s:%d refers to %q, outside the repository: %s", rel, i+1, ref, strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: is the module root right?", checked)
	}
}

// mdLink is a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestRelativeLinksResolve: a link from one document to another names a
// file of the repository.
func TestRelativeLinksResolve(t *testing.T) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "data" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(body), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.ToSlash(rel), m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
