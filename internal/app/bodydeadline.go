package app

import (
	"io"
	"net/http"
	"time"
)

// withBodyDeadline bounds reading an /api request body to d (config
// BODY_READ_TIMEOUT), so a stalled upload cannot hold its handler for ever.
// The deadline is lifted as soon as the body is read: a read deadline that
// expires later would cancel the request's context while the handler still
// works. http.Server.ReadTimeout is not used because it would cover /v1
// too, where a response may stream for minutes (relay readBody sets its
// own deadline).
func withBodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
