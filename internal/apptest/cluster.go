package apptest

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/app"
)

// NewNode starts a gateway in cluster mode as node nodeID with secret as
// its CLUSTER_SECRET. Its CLUSTER_NODE_ADDRESS is the loopback URL it
// serves on: the port is taken before the app is built, so the address
// the node sends its peers is the one they can call. env overrides the
// defaults as in New (CLUSTER_PING_INTERVAL, CLUSTER_MAX_PING_FAILURES).
func NewNode(t testing.TB, nodeID int, secret string, env ...string) *Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	vars := []string{
		"CLUSTER_NODE_ID", fmt.Sprint(nodeID),
		"CLUSTER_NODE_NAME", fmt.Sprintf("node-%d", nodeID),
		"CLUSTER_NODE_ADDRESS", "http://" + ln.Addr().String(),
		"CLUSTER_SECRET", secret,
	}
	return startOn(t, Config(t, append(vars, env...)...), ln, []app.Option(nil)...)
}

// URL is the base address of the gateway.
func (e *Env) URL() string { return e.Server.URL }

// Pause makes the gateway drop every connection, as a node that stopped
// answering; Resume serves again. The app keeps running (its workers
// too), so a test sees its peers' view of an outage.
func (e *Env) Pause() { e.down.Store(true) }

// Resume ends Pause.
func (e *Env) Resume() { e.down.Store(false) }

// gated is h behind Pause.
func (e *Env) gated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.down.Load() {
			// ErrAbortHandler closes the connection without a response
			// and without a logged panic.
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, r)
	})
}
