package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// contentTypes maps the extensions the console ships to their types. A
// fixed table, not mime.TypeByExtension: that one reads /etc/mime.types,
// and a machine mapping .mjs to something else would break module loading
// (browsers refuse modules not served as JavaScript).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console: files under web/ by path, and index.html for
// "/" and for every path without a file extension, so the client-side
// router owns /keys, /login and the like. A missing file with an extension
// is a plain 404; there is no directory listing. Every answer carries a
// strict Content-Security-Policy (same origin only). Files are revalidated
// on each load (Cache-Control: no-cache) against a content-hash ETag, so a
// new binary is picked up at once and an unchanged file costs a 304.
func Handler() http.Handler {
	h, err := newHandler(files)
	if err != nil {
		// The embedded files are fixed at build time; the package's tests
		// load them, so this cannot happen in a tested binary.
		panic(err)
	}
	return h
}

type handler struct {
	assets map[string]asset // by path without the leading slash
	index  asset
	csp    string
}

func newHandler(fsys fs.FS) (*handler, error) {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			// LICENSE files and the like: served as text, never sniffed.
			ctype = "text/plain; charset=utf-8"
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.assets[p] = asset{body: body, ctype: ctype, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load console files: %w", err)
	}
	index, ok := h.assets["index.html"]
	if !ok {
		return nil, fmt.Errorf("load console files: index.html missing")
	}
	h.index = index
	h.csp = contentSecurityPolicy(index.body)
	return h, nil
}

// contentSecurityPolicy allows this origin only. The one inline script, the
// import map that lets the vendored modules import "preact" by name, is
// allowed by its hash, so the vendored files stay byte for byte what npm
// ships and no other inline script can run.
func contentSecurityPolicy(index []byte) string {
	script := "'self'"
	const open, end = `<script type="importmap">`, `</script>`
	if _, rest, ok := bytes.Cut(index, []byte(open)); ok {
		if body, _, ok := bytes.Cut(rest, []byte(end)); ok {
			sum := sha256.Sum256(body)
			script += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		}
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src " + script,
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; ")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	p := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	a, ok := h.assets[p]
	if !ok {
		if path.Ext(p) != "" {
			http.NotFound(w, r)
			return
		}
		// A client-side route ("", "keys", "admin/users"), or a directory
		// of the embedded tree: both get the app, never a listing.
		a = h.index
	}
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	// ServeContent answers If-None-Match with 304, HEAD and ranges.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
