package app

import "net/http"

// withNosniff marks every answer (API, console, /v1, probes) so a browser
// never reads a JSON or text answer as a script or a page: a key name or a
// log line an attacker wrote stays data (issue 30 §4). Set before the
// handler runs, it also covers ServeMux's own redirects and 404s.
//
// The value slice is shared by every answer: net/http copies the header
// when it writes it, and a handler's Set replaces the slice.
func withNosniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Content-Type-Options"] = nosniff
		next.ServeHTTP(w, r)
	})
}

var nosniff = []string{"nosniff"}
