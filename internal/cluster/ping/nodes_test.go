package ping_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster"
)

type nodeInfo struct {
	ID            int64  `json:"id"`
	NodeID        int    `json:"node_id"`
	NodeName      string `json:"node_name"`
	Address       string `json:"address"`
	Status        int    `json:"status"`
	LastHeartbeat int64  `json:"last_heartbeat"`
	PingFailures  int    `json:"ping_failures"`
	Disabled      bool   `json:"disabled"`
	SecretKey     string `json:"secret_key"`
	State         string `json:"state"`
}

// nodes is node e's table by node id.
func nodes(t *testing.T, root *apptest.Client) map[int]nodeInfo {
	t.Helper()
	var rows []nodeInfo
	root.OK("GET", "/api/cluster_node/", nil).Decode(t, &rows)
	out := make(map[int]nodeInfo, len(rows))
	for _, r := range rows {
		out[r.NodeID] = r
	}
	return out
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	secretA = "secret-of-node-a-0123456789"
	secretB = "secret-of-node-b-0123456789"
	secretC = "secret-of-node-c-0123456789"
)

// Three real nodes on loopback, each on its own database, pinging every
// 100 ms: ping records the caller on the callee, awaiting its secret, a
// node listed by a peer is discovered by a third, root completes the
// records, a wrong secret is refused, a silent peer fails after
// CLUSTER_MAX_PING_FAILURES and comes back by itself, and a disabled peer
// is not pinged.
func TestThreeNodes(t *testing.T) {
	env := []string{"CLUSTER_PING_INTERVAL", "100ms", "CLUSTER_MAX_PING_FAILURES", "3"}
	a := apptest.NewNode(t, 1, secretA, env...)
	b := apptest.NewNode(t, 2, secretB, env...)
	c := apptest.NewNode(t, 3, secretC, env...)
	ra, rb, rc := a.Root(), b.Root(), c.Root()

	// A knows B. A's ping records A on B without the secret it sent:
	// awaiting root's, not pinged. Root completes it; B pings A back.
	ra.OK("POST", "/api/cluster_node/", map[string]any{"node_id": 2, "node_name": "b", "address": b.URL(), "secret_key": secretB})
	eventually(t, "B learns A from A's ping", 5*time.Second, func() bool {
		n, ok := nodes(t, rb)[1]
		return ok && n.SecretKey == "" && n.State == cluster.StateAwaitingSecret && n.Address == a.URL() && n.NodeName == "node-1"
	})
	time.Sleep(300 * time.Millisecond)
	if n := nodes(t, rb)[1]; n.LastHeartbeat != 0 || n.SecretKey != "" {
		t.Fatalf("B pinged A awaiting its secret: %+v", n)
	}
	rb.OK("PUT", "/api/cluster_node/", map[string]any{"id": nodes(t, rb)[1].ID, "secret_key": secretA})
	eventually(t, "B pings A back", 5*time.Second, func() bool {
		return nodes(t, rb)[1].LastHeartbeat > 0
	})
	// A records its ping's outcome after B answered, so it may come a
	// moment after B's ping back.
	eventually(t, "A records B alive", 5*time.Second, func() bool {
		n := nodes(t, ra)[2]
		return n.Status == cluster.StatusAlive && n.LastHeartbeat > 0 && n.PingFailures == 0
	})

	// C knows only B. B's answer lists A: C adds A without a secret and
	// does not ping it; B learns C, and A learns C from B's list.
	rc.OK("POST", "/api/cluster_node/", map[string]any{"node_id": 2, "node_name": "b", "address": b.URL(), "secret_key": secretB})
	eventually(t, "C discovers A through B", 5*time.Second, func() bool {
		n, ok := nodes(t, rc)[1]
		return ok && n.Address == a.URL() && n.SecretKey == ""
	})
	eventually(t, "A discovers C through B", 5*time.Second, func() bool {
		n, ok := nodes(t, ra)[3]
		return ok && n.Address == c.URL() && n.SecretKey == ""
	})
	time.Sleep(300 * time.Millisecond)
	if n := nodes(t, rc)[1]; n.LastHeartbeat != 0 || n.PingFailures != 0 {
		t.Fatalf("C pinged A without a secret: %+v", n)
	}
	rc.Fail("GET", apptest.Path("/api/cluster_node/ping/%d", nodes(t, rc)[1].ID), nil, http.StatusOK, api.MsgNodeNoSecret)

	// C's pings do not teach A or B C's secret: the operator completes
	// every record that awaits one, on each side, and all are alive.
	if n := nodes(t, rb)[3]; n.SecretKey != "" || n.State != cluster.StateAwaitingSecret {
		t.Fatalf("C's record on B: %+v", n)
	}
	rc.OK("PUT", "/api/cluster_node/", map[string]any{"id": nodes(t, rc)[1].ID, "secret_key": secretA})
	ra.OK("PUT", "/api/cluster_node/", map[string]any{"id": nodes(t, ra)[3].ID, "secret_key": secretC})
	rb.OK("PUT", "/api/cluster_node/", map[string]any{"id": nodes(t, rb)[3].ID, "secret_key": secretC})
	eventually(t, "every node sees every other alive", 5*time.Second, func() bool {
		for _, r := range []*apptest.Client{ra, rb, rc} {
			ns := nodes(t, r)
			if len(ns) != 2 {
				return false
			}
			for _, n := range ns {
				if n.Status != cluster.StatusAlive || n.LastHeartbeat == 0 || n.SecretKey == "" || n.State != cluster.StateAlive {
					return false
				}
			}
		}
		return true
	})

	// A wrong secret is refused without detail.
	wrong := a.Client()
	wrong.Header.Set("X-Cluster-Secret", secretB)
	wrong.Fail("POST", "/api/cluster/ping", map[string]any{"node_id": 9, "node_name": "x", "address": "http://x", "secret_key": "s"},
		http.StatusUnauthorized, api.MsgClusterSecret)
	if _, ok := nodes(t, ra)[9]; ok {
		t.Fatal("a refused ping recorded its sender")
	}

	// B stops answering: after 3 failed pings A and C mark it failed;
	// they keep pinging it (every 5th round), so it comes back by itself.
	b.Pause()
	eventually(t, "A marks B failed", 5*time.Second, func() bool {
		n := nodes(t, ra)[2]
		return n.Status == cluster.StatusFailed && n.PingFailures >= 3
	})
	eventually(t, "C marks B failed", 5*time.Second, func() bool { return nodes(t, rc)[2].Status == cluster.StatusFailed })
	b.Resume()
	eventually(t, "A sees B alive again", 5*time.Second, func() bool {
		n := nodes(t, ra)[2]
		return n.Status == cluster.StatusAlive && n.PingFailures == 0
	})

	// A disables B: A stops pinging it (its failures stop growing while B
	// is down), B still answers pings, and enabling resumes them.
	bOnA := nodes(t, ra)[2]
	ra.OK("DELETE", apptest.Path("/api/cluster_node/%d", bOnA.ID), nil)
	b.Pause()
	eventually(t, "C sees B failing", 5*time.Second, func() bool { return nodes(t, rc)[2].PingFailures >= 2 })
	if n := nodes(t, ra)[2]; n.PingFailures != 0 || n.Status != cluster.StatusAlive || !n.Disabled {
		t.Fatalf("A pinged the disabled B: %+v", n)
	}
	b.Resume()
	ra.OK("POST", apptest.Path("/api/cluster_node/%d/enable", bOnA.ID), nil)
	before := nodes(t, ra)[2].LastHeartbeat
	eventually(t, "A pings B again after enable", 5*time.Second, func() bool {
		return nodes(t, ra)[2].LastHeartbeat > before
	})
}
