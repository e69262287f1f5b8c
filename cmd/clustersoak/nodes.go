package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// apiClient makes the soak's management calls and polls.
var apiClient = &http.Client{Timeout: 10 * time.Second}

// secrets are generated per run. Every node shares the session secret, so
// a user's session cookie (which the cookie jar sends to every port of
// 127.0.0.1) opens the same user on each node.
type secrets struct {
	rootPassword, rootToken, session string
}

func newSecrets() secrets {
	return secrets{rootPassword: rand.Text(), rootToken: rand.Text(), session: rand.Text()}
}

// node is one modelgate process of the cluster, with its own data
// directory and port, both kept across a restart.
type node struct {
	id      int
	port    int
	dir     string
	base    string // http://127.0.0.1:port
	secret  string // its CLUSTER_SECRET
	bin     string
	secrets secrets

	cmd  *exec.Cmd
	done chan struct{}
	up   atomic.Bool // serving: load and probes call it
}

func newNode(id int, bin, root string, s secrets) (*node, error) {
	port, err := gatewayproc.FreePort()
	if err != nil {
		return nil, err
	}
	n := &node{id: id, port: port, dir: filepath.Join(root, fmt.Sprintf("node-%d", id)), bin: bin, secrets: s,
		secret: rand.Text()}
	n.base = "http://127.0.0.1:" + strconv.Itoa(port)
	return n, os.MkdirAll(n.dir, 0o700)
}

func (n *node) dbPath() string { return filepath.Join(n.dir, "data", "modelgate.db") }

func (n *node) env() []string {
	return append(gatewayproc.ChildEnv(),
		"DATA_DIR="+filepath.Join(n.dir, "data"),
		"PORT="+strconv.Itoa(n.port),
		"INITIAL_ROOT_PASSWORD="+n.secrets.rootPassword,
		"ROOT_ACCESS_TOKEN="+n.secrets.rootToken,
		"SESSION_SECRET="+n.secrets.session,
		"LOG_LEVEL=warn",
		"CLUSTER_NODE_ID="+strconv.Itoa(n.id),
		fmt.Sprintf("CLUSTER_NODE_NAME=node-%d", n.id),
		"CLUSTER_NODE_ADDRESS="+n.base,
		"CLUSTER_SECRET="+n.secret,
		"CLUSTER_PUSH_INTERVAL=200ms",
		"CLUSTER_PING_INTERVAL=1s",
	)
}

// start runs the binary (again) on the node's port and data, appending to
// its log, and waits until GET /api/status answers.
func (n *node) start(ctx context.Context) error {
	logFile, err := os.OpenFile(filepath.Join(n.dir, "modelgate.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(n.bin)
	cmd.Env = n.env()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = gatewayproc.ChildSysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", n.id, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case <-done:
			return fmt.Errorf("node %d exited before it was ready (log: %s)", n.id, filepath.Join(n.dir, "modelgate.log"))
		default:
		}
		if gatewayproc.Call(ctx, apiClient, http.MethodGet, n.base+"/api/status", "", nil, nil) == nil {
			n.up.Store(true)
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			n.kill()
			return ctx.Err()
		}
	}
	n.kill()
	return fmt.Errorf("node %d not ready within 30 s", n.id)
}

// kill ends the process with SIGKILL: no drain, no flush, as a crash.
func (n *node) kill() {
	n.up.Store(false)
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Kill()
	<-n.done
}

// stop ends the process cleanly (SIGTERM: it drains and flushes its logs),
// with SIGKILL after grace.
func (n *node) stop(grace time.Duration) error {
	n.up.Store(false)
	if n.cmd == nil {
		return nil
	}
	select {
	case <-n.done:
		return nil
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		return nil
	case <-time.After(grace):
		n.cmd.Process.Kill()
		<-n.done
		return fmt.Errorf("node %d did not stop within %s: killed", n.id, grace)
	}
}

// root makes a call as root on the node.
func (n *node) root(ctx context.Context, method, path string, body, data any) error {
	return gatewayproc.Call(ctx, apiClient, method, n.base+path, n.secrets.rootToken, body, data)
}

// register records every other node, with its secret, in each node's
// table, so each pushes to all and hears all (docs/cluster.md, Nodes).
func register(ctx context.Context, nodes []*node) error {
	for _, n := range nodes {
		for _, peer := range nodes {
			if peer == n {
				continue
			}
			if err := n.record(ctx, peer); err != nil {
				return fmt.Errorf("register node %d on node %d: %w", peer.id, n.id, err)
			}
		}
	}
	return nil
}

// record records peer in n's table: created, or completed when a ping of
// peer recorded it already (awaiting its secret), which POST refuses.
func (n *node) record(ctx context.Context, peer *node) error {
	body := map[string]any{"node_id": peer.id, "node_name": fmt.Sprintf("node-%d", peer.id),
		"address": peer.base, "secret_key": peer.secret}
	err := n.root(ctx, http.MethodPost, "/api/cluster_node/", body, nil)
	if err == nil {
		return nil
	}
	var rows []struct {
		ID     int64 `json:"id"`
		NodeID int   `json:"node_id"`
	}
	if lerr := n.root(ctx, http.MethodGet, "/api/cluster_node/?page_size=100", nil, &rows); lerr != nil {
		return err
	}
	for _, r := range rows {
		if r.NodeID == peer.id {
			body["id"] = r.ID
			return n.root(ctx, http.MethodPut, "/api/cluster_node/", body, nil)
		}
	}
	return err
}

// liveNodes are the nodes serving now.
func liveNodes(nodes []*node) []*node {
	var live []*node
	for _, n := range nodes {
		if n.up.Load() {
			live = append(live, n)
		}
	}
	return live
}

var errNoNode = errors.New("no node is up")
