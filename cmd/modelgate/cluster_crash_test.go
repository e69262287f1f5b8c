package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/user"
)

// A cluster node killed with SIGKILL and restarted on the same data
// receives what its peers wrote while it was dead, and what it wrote just
// before dying still reaches them (issue 11, "Done when").
func TestKilledClusterNodeCatchesUp(t *testing.T) {
	apptest.Parallel(t)
	if testing.Short() {
		t.Skip("builds and kills a real process")
	}
	bin := buildGateway(t)
	env := []string{"CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms"}
	n1 := apptest.NewNode(t, 1, apptest.NodeSecret(1), env...)
	n2 := apptest.NewNode(t, 2, apptest.NodeSecret(2), env...)
	p3 := newNodeProcess(t, bin, 3)
	p3.start(t)
	n3 := apptest.Attach(t, p3.url)
	all := []*apptest.Env{n1, n2, n3}
	roots := make([]*apptest.Client, len(all))
	for i, e := range all {
		roots[i] = e.Root()
	}
	for i := range all {
		for j, peer := range all {
			if i != j {
				peer.AddTo(roots[i], j+1)
			}
		}
	}
	quota := func(root *apptest.Client, id int64) (int64, bool) {
		r := root.Do("GET", apptest.Path("/api/user/%d", id), nil)
		var u apptest.UserInfo
		if r.Success {
			r.Decode(t, &u)
		}
		return u.Quota, r.Success
	}
	_, uid := n1.NewUser("survivor", user.RoleUser)
	// On every node before any tops it up: nodes 1 and 2 do below, and
	// node 2 receives the user from node 1 as node 3 does, not before it.
	for i, r := range roots {
		apptest.Eventually(t, fmt.Sprintf("the user on node %d", i+1), func() bool { _, ok := quota(r, uid); return ok })
	}
	base, _ := quota(roots[0], uid)

	// Node 3 writes, then dies at once: its event is in its outbox.
	roots[2].OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 3})
	p3.kill(t)
	// Its peers write while it is dead.
	for i := range 10 {
		roots[i%2].OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 1000})
	}
	_, late := n2.NewUser("bornwhiledead", user.RoleUser)
	time.Sleep(300 * time.Millisecond) // pushes to the dead node fail

	p3.start(t)
	roots[2] = n3.Root()
	for i, r := range roots {
		apptest.Eventually(t, fmt.Sprintf("every top-up on node %d", i+1), func() bool {
			q, _ := quota(r, uid)
			_, ok := quota(r, late)
			return q == base+10_003 && ok
		})
	}
}

// nodeProcess is a modelgate binary run as a cluster node on a fixed port
// and data directory, so it can be killed and started again as the same
// node.
type nodeProcess struct {
	bin, dataDir, dsn, url string
	id, port               int
	cmd                    *exec.Cmd
}

func newNodeProcess(t *testing.T, bin string, id int) *nodeProcess {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return &nodeProcess{bin: bin, dataDir: t.TempDir(), dsn: storetest.Selected(t).FreshDSN(t), id: id, port: port,
		url: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

func (p *nodeProcess) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(p.bin)
	cmd.Env = append(os.Environ(), "SQL_DSN="+p.dsn, fmt.Sprintf("PORT=%d", p.port), "DATA_DIR="+p.dataDir, "LOG_LEVEL=info",
		"INITIAL_ROOT_PASSWORD="+apptest.RootPassword, "ROOT_ACCESS_TOKEN="+apptest.RootAccessToken,
		"SESSION_SECRET="+apptest.SessionSecret,
		fmt.Sprintf("CLUSTER_NODE_ID=%d", p.id), "CLUSTER_NODE_ADDRESS="+p.url, "CLUSTER_SECRET="+apptest.NodeSecret(p.id),
		"CLUSTER_PING_INTERVAL=1h", "CLUSTER_PUSH_INTERVAL=100ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case <-listeningPort(stderr):
	case <-time.After(30 * time.Second):
		t.Fatal("the node process is not listening")
	}
	p.cmd = cmd
}

// kill ends the process with SIGKILL: nothing is flushed or closed.
func (p *nodeProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}
