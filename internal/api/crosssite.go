package api

import (
	"net/http"
	"net/url"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/msgtext"
)

// MsgCrossSite answers a browser request another origin made: a
// cross-origin write, or a cross-origin request to a GET that changes state.
const MsgCrossSite = "拒绝跨站请求"

// CrossOriginProtection refuses cross-origin browser writes (non-safe methods
// whose Sec-Fetch-Site or Origin names another origin) with the JSON
// envelope and 403, as every other /api failure, in the message language.
func (s *Server) CrossOriginProtection() *http.CrossOriginProtection {
	p := http.NewCrossOriginProtection()
	// Payment notifications come from the providers' servers, carry no
	// session and are verified by signature.
	p.AddInsecureBypassPattern("POST /api/payment/mobile_a/notify")
	p.AddInsecureBypassPattern("POST /api/payment/mobile_b/notify")
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = httpx.WriteJSON(w, http.StatusForbidden, httpx.Envelope{Message: msgtext.Message(s.lang(), MsgCrossSite)})
	}))
	return p
}

// sameOriginOnly guards the GETs that change state or call out (a new
// access token, a channel test call, logout, mailed codes, binding an
// email, the cluster's pings). CrossOriginProtection lets every GET
// through, and a session cookie rides along on any same-site request: a
// page on another port of the same host is same-site, and with an <img>
// it could rotate root's token or log root out (issue 30 §4). So only
// Sec-Fetch-Site same-origin and none (typed in the address bar) go ahead.
// A request without the header (non-browser clients, which carry no
// ambient cookie of a victim, and old browsers) goes ahead unless its
// Origin names another host. The console uses the POST twins of these
// routes, which CrossOriginProtection guards like every write.
func sameOriginOnly(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !sameOrigin(r) {
			return httpx.FailStatus(http.StatusForbidden, MsgCrossSite)
		}
		return h(w, r)
	}
}

// sameOrigin reports whether the browser says r came from the server's own
// origin (or from no page at all).
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
		origin := r.Header.Get("Origin")
		if origin == "" {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && u.Host == r.Host
	default: // same-site, cross-site and anything unknown
		return false
	}
}
