package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/audit"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/store"
)

// The audit trail (issue 30 §4, docs/api.md "Audit log"): every admin
// write that succeeds is recorded here, in one place, by handle: the
// caller, its address, the route, the target, and a detail holding the
// request body, the target as it was before and the answer after, each
// masked by package audit. Handlers need not know about it.

// maxAuditCapture bounds what is kept of an answer for its "after".
const maxAuditCapture = 256 << 10

// maxAuditDetail bounds a stored detail: a larger one keeps only the
// request.
const maxAuditDetail = 64 << 10

// audited reports whether a route at lvl is recorded: the admin and root
// routes that write. GETs are not, the state-changing ones included (a
// channel test or a ping changes no setting).
func audited(pattern string, lvl level) bool {
	method, _, _ := strings.Cut(pattern, " ")
	return lvl >= levelAdmin && method != http.MethodGet && method != http.MethodHead
}

// auditAction names a route in the trail: its method and path, without the
// exact-match marker ("PUT /api/channel/").
func auditAction(pattern string) string {
	return strings.TrimSuffix(pattern, "{$}")
}

// recordAudit wraps h, a route behind requireRole, so its successful calls
// are written to the trail.
func (s *Server) recordAudit(pattern string, h httpx.HandlerFunc) httpx.HandlerFunc {
	action := auditAction(pattern)
	_, path, _ := strings.Cut(action, " ")
	resource, _, _ := strings.Cut(strings.TrimPrefix(path, "/api/"), "/")
	return func(w http.ResponseWriter, r *http.Request) error {
		body := peekBody(r)
		var req any
		if isJSON(r) {
			req = audit.MaskJSON(body)
		}
		target := auditTarget(r, resource, req)
		req = maskOption(resource, req)
		var before any
		if !(r.Method == http.MethodPost && strings.HasSuffix(path, "/")) {
			before = s.auditBefore(r, target) // not a create: there was a row
		}
		cw := &captureWriter{ResponseWriter: w}
		if err := h(cw, r); err != nil {
			return err
		}
		after, ok := cw.success()
		if !ok {
			return nil
		}
		detail := map[string]any{}
		for k, v := range map[string]any{"request": req, "before": before, "after": after} {
			if v != nil {
				detail[k] = v
			}
		}
		if q := r.URL.Query(); len(q) > 0 {
			detail["query"] = audit.Mask(queryMap(q))
		}
		s.writeAudit(r, action, target, detail)
		return nil
	}
}

// writeAudit stores one entry. The action already happened: a failure to
// record it is logged, not answered.
func (s *Server) writeAudit(r *http.Request, action, target string, detail map[string]any) {
	raw, _ := json.Marshal(detail)
	if len(raw) > maxAuditDetail {
		raw, _ = json.Marshal(map[string]any{"request": detail["request"], "truncated": true})
		if len(raw) > maxAuditDetail {
			raw = []byte(`{"truncated":true}`)
		}
	}
	e := store.AuditEntry{CreatedAt: s.now().Unix(), IP: clientIP(r), Action: action, Target: target, Detail: string(raw)}
	if u := caller(r); u != nil {
		e.UserID, e.Username = u.ID, u.Username
	}
	if err := s.Store.InsertAudit(context.WithoutCancel(r.Context()), &e); err != nil {
		s.Log.Error("record audit entry", "action", action, "target", target, "err", err)
	}
}

// peekBody reads the request body (at most the API's body limit, which
// the handler enforces anyway) and puts it back for the handler.
func peekBody(r *http.Request) []byte {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	buf, _ := io.ReadAll(io.LimitReader(r.Body, httpx.MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	return buf
}

// isJSON: a multipart upload (a payment certificate) or any other body is
// never recorded, only that there was one.
func isJSON(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return ct == "" || strings.HasPrefix(ct, "application/json")
}

// auditTarget names what the action changed: "<resource>:<id>" from the
// path's {id}, else the body's id or user_id, "option:<key>" for a
// setting, "payment:<method>" for a payment channel; "" when the action
// has none (a bulk delete of logs).
func auditTarget(r *http.Request, resource string, req any) string {
	if id := r.PathValue("id"); id != "" {
		return resource + ":" + id
	}
	if m := r.PathValue("method"); m != "" {
		return "payment:" + m
	}
	body, _ := req.(map[string]any)
	if resource == "option" {
		if k, ok := body["key"].(string); ok {
			return "option:" + k
		}
	}
	if id, ok := body["id"].(float64); ok {
		return resource + ":" + strconv.FormatInt(int64(id), 10)
	}
	if id, ok := body["user_id"].(float64); ok {
		return "user:" + strconv.FormatInt(int64(id), 10)
	}
	if name, ok := body["username"].(string); ok && resource == "user" {
		return "user:" + name
	}
	return ""
}

// maskOption masks a setting's value when the option is one the API hides
// (payment keys, SMTP and sign-in secrets), whatever its name says.
func maskOption(resource string, req any) any {
	body, ok := req.(map[string]any)
	if !ok || resource != "option" {
		return req
	}
	if k, _ := body["key"].(string); option.Hidden(k) {
		if _, ok := body["value"]; ok {
			body["value"] = audit.Masked
		}
	}
	return body
}

// beforeRoutes are the resources whose row can be read back by GET
// /api/<resource>/<id>: the "before" of an update or delete.
var beforeRoutes = map[string]bool{
	"user": true, "channel": true, "redemption": true, "plan": true, "subscription": true, "order": true,
	"cluster_node": true,
}

// auditBefore reads the target as it is before the action, through the
// route an admin would read it with (so it is the same, masked view), or
// the option's current value. nil when there is nothing to read.
func (s *Server) auditBefore(r *http.Request, target string) any {
	resource, key, ok := strings.Cut(target, ":")
	if !ok {
		return nil
	}
	if resource == "option" {
		if option.Hidden(key) {
			return map[string]any{"key": key, "value": audit.Masked}
		}
		v, found := s.Options.Current().Values()[key]
		if !found {
			return nil
		}
		return audit.Mask(map[string]any{"key": key, "value": v})
	}
	if !beforeRoutes[resource] || s.mux == nil {
		return nil
	}
	if _, err := strconv.ParseInt(key, 10, 64); err != nil {
		return nil
	}
	get := r.Clone(r.Context())
	get.Method, get.Body, get.ContentLength = http.MethodGet, http.NoBody, 0
	get.URL = &url.URL{Path: "/api/" + resource + "/" + key}
	get.RequestURI = get.URL.Path
	cw := &captureWriter{ResponseWriter: discardWriter{h: http.Header{}}}
	s.mux.ServeHTTP(cw, get)
	data, _ := cw.success()
	return data
}

// captureWriter keeps the start of an answer to read its data back.
type captureWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if room := maxAuditCapture - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// success reports whether the answer was a successful envelope, and its
// data masked when it is an object (a list or a bare string, such as
// generated codes, is not kept).
func (c *captureWriter) success() (any, bool) {
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(c.buf.Bytes(), &env); err != nil {
		// Cut at the capture limit: a success it was if it said so.
		return nil, bytes.HasPrefix(bytes.TrimSpace(c.buf.Bytes()), []byte(`{"success":true`))
	}
	if !env.Success {
		return nil, false
	}
	if m, ok := audit.MaskJSON(env.Data).(map[string]any); ok {
		return m, true
	}
	return nil, true
}

// discardWriter answers the internal read of auditBefore into nothing.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}

func queryMap(q url.Values) map[string]any {
	m := make(map[string]any, len(q))
	for k, v := range q {
		m[k] = strings.Join(v, ",")
	}
	return m
}

// auditView is an entry as GET /api/audit/ shows it; detail is the JSON
// object recorded.
type auditView struct {
	ID        int64           `json:"id"`
	CreatedAt int64           `json:"created_at"`
	UserID    int64           `json:"user_id"`
	Username  string          `json:"username"`
	IP        string          `json:"ip"`
	Action    string          `json:"action"`
	Target    string          `json:"target"`
	Detail    json.RawMessage `json:"detail"`
}

func viewAudit(e *store.AuditEntry) auditView {
	d := json.RawMessage(e.Detail)
	if !json.Valid(d) {
		d, _ = json.Marshal(e.Detail)
	}
	return auditView{ID: e.ID, CreatedAt: e.CreatedAt, UserID: e.UserID, Username: e.Username, IP: e.IP,
		Action: e.Action, Target: e.Target, Detail: d}
}

// listAudit serves GET /api/audit/: newest first, filtered by user_id,
// username, action (substring), target (exact), start_timestamp and
// end_timestamp, paged like the logs.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	var f store.AuditFilter
	var err error
	for _, p := range []struct {
		name string
		max  int
		dst  *string
	}{{"username", maxNameChars, &f.Username}, {"action", 128, &f.Action}, {"target", 191, &f.Target}} {
		if *p.dst, err = httpx.QueryText(r, p.name, p.max); err != nil {
			return err
		}
	}
	if f.UserID, err = httpx.QueryInt(r, "user_id", 0); err != nil {
		return err
	}
	if f.Start, err = httpx.QueryInt(r, "start_timestamp", 0); err != nil {
		return err
	}
	if f.End, err = httpx.QueryInt(r, "end_timestamp", 0); err != nil {
		return err
	}
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Store.ListAudit(r.Context(), f, pg)
	if err != nil {
		return err
	}
	views := make([]auditView, len(rows))
	for i := range rows {
		views[i] = viewAudit(&rows[i])
	}
	return httpx.OKList(w, views, total)
}
