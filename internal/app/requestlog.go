package app

import (
	"log/slog"
	"net/http"
	"time"
)

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withRequestLog logs one line per request at debug level: method, path
// (never the query or headers, which may carry credentials), status, time.
func withRequestLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		serveLogged(log, next, w, r)
	})
}

// serveLogged serves r and logs its line. It is a function of its own, not
// inlined, so that the line's arguments are not in the frame every request
// passes through: that frame is under every call's deepest point
// (docs/performance.md, "A stream's stack").
//
//go:noinline
func serveLogged(log *slog.Logger, next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"ms", time.Since(start).Milliseconds())
}
