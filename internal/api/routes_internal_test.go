package api

import (
	"net/http"
	"testing"
)

// An internal route registered any other way than through internal (the
// sender's signature) must not start: adding a route cannot forget it.
func TestInternalRoutesNeedTheSender(t *testing.T) {
	t.Parallel()
	s := New(Deps{})
	for _, tc := range []struct {
		name     string
		register func(mux *http.ServeMux)
	}{
		{"a cluster route through handle", func(mux *http.ServeMux) { s.handle(mux, "POST /api/cluster/new", levelGuest, s.clusterSync) }},
		{"a root cluster route through handle", func(mux *http.ServeMux) { s.handle(mux, "POST /api/cluster/x", levelRoot, s.clusterSync) }},
		{"a guest read below the cluster prefix through handle", func(mux *http.ServeMux) { s.handle(mux, "GET /api/cluster/x", levelGuest, s.clusterSync) }},
		{"an admin read below the cluster prefix through handle", func(mux *http.ServeMux) { s.handle(mux, "GET /api/cluster/x", levelAdmin, s.clusterSync) }},
		{"another route through internal", func(mux *http.ServeMux) { s.internal(mux, "POST /api/user/x", knownPeers, 1, s.clusterSync) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", tc.name)
				}
			}()
			tc.register(http.NewServeMux())
		}()
	}
	s.Handler() // every route of the list registers
}
