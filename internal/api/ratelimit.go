package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/ratelimit"
)

// rateLimitStatus shows admins how this node enforces rate limits: where
// it counts, how many nodes share each limit out, and the Redis failures
// and refusals counted since it started (docs/decisions/rate-limits.md).
func (s *Server) rateLimitStatus(w http.ResponseWriter, r *http.Request) error {
	var st ratelimit.Status
	if s.RateLimits != nil {
		st = s.RateLimits.Status()
	}
	st.FailClosed = s.Options.Current().RateLimitFailClosed
	return httpx.OK(w, st)
}
