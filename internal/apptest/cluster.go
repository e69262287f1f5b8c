package apptest

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/cluster/peer"
)

// NewNode starts a gateway in cluster mode as node nodeID with secret as
// its CLUSTER_SECRET. Its CLUSTER_NODE_ADDRESS is the loopback URL it
// serves on: the port is taken before the app is built, so the address
// the node sends its peers is the one they can call. env overrides the
// defaults as in New (CLUSTER_PING_INTERVAL, CLUSTER_MAX_PING_FAILURES).
func NewNode(t testing.TB, nodeID int, secret string, env ...string) *Env {
	t.Helper()
	return NewNodeWithLog(t, nodeID, secret, nil, env...)
}

// NewNodeWithLog is NewNode logging to log (a test reading the node's log
// lines); nil logs as NewNode does.
func NewNodeWithLog(t testing.TB, nodeID int, secret string, log *slog.Logger, env ...string) *Env {
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
	cfg := Config(t, append(vars, env...)...)
	if log == nil {
		return startOn(t, cfg, ln, []app.Option(nil)...)
	}
	return startLogged(t, cfg, ln, log)
}

// Restart stops the node and starts it again on the same address and
// database, as a process started again after it stopped: what it kept in
// memory is gone, its database stays.
func (e *Env) Restart() *Env {
	e.t.Helper()
	addr := strings.TrimPrefix(e.URL(), "http://")
	e.Stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		e.t.Fatal(err)
	}
	return startOn(e.t, e.Config, ln)
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

// NodeSecret is the CLUSTER_SECRET NewCluster gives node id.
func NodeSecret(id int) string { return fmt.Sprintf("cluster-secret-of-node-%d", id) }

// NewCluster starts n nodes (ids 1..n) that know each other: each node's
// table lists every other node with its secret, so each pushes to all.
// Changes are pushed every 100 ms (and at once after a commit); pings are
// left to the tests (1 h). env overrides the defaults for every node.
func NewCluster(t testing.TB, n int, env ...string) []*Env {
	t.Helper()
	return newCluster(t, n, func(_, _ int, peer *Env) string { return peer.URL() }, env...)
}

// newCluster starts n nodes; node from records node to at the address
// addr gives.
func newCluster(t testing.TB, n int, addr func(from, to int, peer *Env) string, env ...string) []*Env {
	t.Helper()
	vars := append([]string{"CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms"}, env...)
	nodes := make([]*Env, n)
	for i := range nodes {
		nodes[i] = NewNode(t, i+1, NodeSecret(i+1), vars...)
	}
	for i, e := range nodes {
		root := e.Root()
		for j, peer := range nodes {
			if i != j {
				root.OK("POST", "/api/cluster_node/", map[string]any{"node_id": j + 1, "node_name": fmt.Sprintf("node-%d", j+1),
					"address": addr(i+1, j+1, peer), "secret_key": NodeSecret(j + 1)})
			}
		}
	}
	return nodes
}

// AddTo records e (node id) in the node table root administers, with e's
// address and secret: a new record, or the one there completed (a ping
// records its sender awaiting its secret). A ping may record the node
// between the listing and the POST; the POST then answers MsgNodeExists
// and the record is completed on the next round.
func (e *Env) AddTo(root *Client, id int) {
	root.t.Helper()
	for range 3 {
		var rows []struct {
			ID     int64 `json:"id"`
			NodeID int   `json:"node_id"`
		}
		root.OK("GET", "/api/cluster_node/?p=0&page_size=100", nil).Decode(root.t, &rows)
		for _, r := range rows {
			if r.NodeID == id {
				root.OK("PUT", "/api/cluster_node/", map[string]any{"id": r.ID, "node_name": fmt.Sprintf("node-%d", id),
					"address": e.URL(), "secret_key": NodeSecret(id)})
				return
			}
		}
		r := root.Do("POST", "/api/cluster_node/", map[string]any{"node_id": id, "node_name": fmt.Sprintf("node-%d", id),
			"address": e.URL(), "secret_key": NodeSecret(id)})
		if r.Status == http.StatusOK && r.Success {
			return
		}
		if r.Message != api.MsgNodeExists {
			root.t.Fatalf("POST /api/cluster_node/: want success, got %d %s", r.Status, r.Raw)
		}
	}
	root.t.Fatalf("node %d: recorded and gone again three times", id)
}

// JoinToken creates, through e's root, a join token for node nodeID to
// pull e's snapshot (POST /api/cluster_node/join_token).
func (e *Env) JoinToken(nodeID int) string {
	e.t.Helper()
	v := OKData[struct {
		Token string `json:"token"`
	}](e.Root(), "POST", "/api/cluster_node/join_token", map[string]any{"node_id": nodeID})
	return v.Token
}

// PeerClient is a client that calls e's internal routes as node nodeID
// would: e's CLUSTER_SECRET in X-Cluster-Secret, every request signed with
// secret (SignAs). secret is the sender's own, or another to forge.
func (e *Env) PeerClient(nodeID int, secret string) *Client {
	c := e.Client()
	c.Header.Set(peer.SecretHeader, e.Config.Cluster.Secret)
	return c.SignAs(nodeID, secret)
}

// SignAs makes c sign every request as node nodeID with secret
// (SignCluster).
func (c *Client) SignAs(nodeID int, secret string) *Client {
	c.sign = func(req *http.Request) { SignCluster(req, nodeID, secret) }
	return c
}

// SignAsAt is SignAs with every timestamp at (a clock off, a replay).
func (c *Client) SignAsAt(nodeID int, secret string, at time.Time) *Client {
	c.sign = func(req *http.Request) { SignClusterAt(req, nodeID, secret, at) }
	return c
}

// SignCluster signs req as node nodeID with secret, at the current time:
// the X-Cluster-Node, X-Cluster-Timestamp and X-Cluster-Signature headers
// of an internal call (peer.Sign). The body is read and put back.
func SignCluster(req *http.Request, nodeID int, secret string) {
	SignClusterAt(req, nodeID, secret, time.Now())
}

// SignClusterAt is SignCluster with the timestamp at.
func SignClusterAt(req *http.Request, nodeID int, secret string, at time.Time) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	ts := at.Unix()
	req.Header.Set(peer.NodeHeader, strconv.Itoa(nodeID))
	req.Header.Set(peer.TimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(peer.SignatureHeader, peer.Sign(secret, ts, req.URL.Path, body))
}

// Eventually polls cond every 20 ms until it holds, failing the test after
// 90 s with what.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	// The deadline only catches a hang: under a loaded machine (the race
	// detector, parallel packages) replication can take many seconds.
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Links are the connections between the nodes of NewLinkedCluster: one
// proxy per direction of each pair, so a test cuts the nodes off from each
// other while each still serves its own clients.
type Links struct {
	proxies map[[2]int]*TCPProxy // [from, to] node ids
}

// Cut refuses every connection from node a to node b and from b to a,
// and cuts the open ones.
func (l *Links) Cut(a, b int) {
	l.proxies[[2]int{a, b}].SetRefusing(true)
	l.proxies[[2]int{b, a}].SetRefusing(true)
}

// Heal makes every link forward again.
func (l *Links) Heal() {
	for _, p := range l.proxies {
		p.SetRefusing(false)
	}
}

// Partition cuts every link between nodes of different groups (node ids).
func (l *Links) Partition(groups ...[]int) {
	side := map[int]int{}
	for i, g := range groups {
		for _, id := range g {
			side[id] = i
		}
	}
	for k := range l.proxies {
		if side[k[0]] != side[k[1]] {
			l.proxies[k].SetRefusing(true)
		}
	}
}

// NewLinkedCluster is NewCluster whose nodes reach each other through
// proxies (Links), so links between nodes can be cut.
func NewLinkedCluster(t testing.TB, n int, env ...string) ([]*Env, *Links) {
	t.Helper()
	links := &Links{proxies: map[[2]int]*TCPProxy{}}
	nodes := newCluster(t, n, func(from, to int, peer *Env) string {
		u, err := url.Parse(peer.URL())
		if err != nil {
			t.Fatal(err)
		}
		p := NewTCPProxy(t, u.Host)
		links.proxies[[2]int{from, to}] = p
		return "http://" + p.Addr()
	}, env...)
	return nodes, links
}
