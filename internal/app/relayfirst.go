package app

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/relay"
)

// relayFirst hands the relay's calls (relay.Direct) to it without the
// mux's path cleaning and matching, which would route them there anyway;
// everything else goes through mux.
func relayFirst(relayHandler http.Handler, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if relay.Direct(r) {
			relayHandler.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
