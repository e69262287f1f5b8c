package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/msgtext"
)

// MsgCrossSite answers a browser request another site made: a cross-origin
// write, or a cross-site navigation to a GET that changes state.
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

// sameSiteOnly guards the spec's GETs that change state (a new access token,
// a channel test call, logout). A Lax session cookie rides along on a
// cross-site top-level navigation, and CrossOriginProtection lets every GET
// through, so these refuse a request the browser marks Sec-Fetch-Site:
// cross-site. same-origin, same-site and none (typed in the address bar) go
// ahead, and so does a request without the header: non-browser clients,
// which carry no ambient cookie of a victim, do not send it.
func sameSiteOnly(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			return httpx.FailStatus(http.StatusForbidden, MsgCrossSite)
		}
		return h(w, r)
	}
}
