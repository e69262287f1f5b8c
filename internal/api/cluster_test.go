package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/user"
)

// nodeInfo is a cluster node record as tests read it.
type nodeInfo struct {
	ID            int64   `json:"id"`
	NodeID        int     `json:"node_id"`
	NodeName      string  `json:"node_name"`
	Address       string  `json:"address"`
	Status        int     `json:"status"`
	LastHeartbeat int64   `json:"last_heartbeat"`
	PingFailures  int     `json:"ping_failures"`
	Disabled      bool    `json:"disabled"`
	SecretKey     *string `json:"secret_key"`
	State         string  `json:"state"`
	CreatedAt     int64   `json:"created_at"`
	UpdatedAt     int64   `json:"updated_at"`
}

const nodeSecret = "node-one-secret-0123456789"

// clusterNode starts node 1 in cluster mode with a ping pace slow enough
// that the worker stays out of the way.
func clusterNode(t *testing.T) *apptest.Env {
	return apptest.NewNode(t, 1, nodeSecret, "CLUSTER_PING_INTERVAL", "1h")
}

func nodeBody(nodeID int, kv ...any) map[string]any {
	b := map[string]any{"node_id": nodeID, "node_name": fmt.Sprintf("n%d", nodeID),
		"address": fmt.Sprintf("http://n%d.example.com:3000", nodeID), "secret_key": "peer-secret"}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func TestClusterModeOff(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/cluster_node/"}, {"GET", "/api/cluster_node/1"}, {"POST", "/api/cluster_node/"},
		{"PUT", "/api/cluster_node/"}, {"DELETE", "/api/cluster_node/1"}, {"POST", "/api/cluster_node/1/enable"},
		{"GET", "/api/cluster_node/ping/1"},
	} {
		root.Fail(r.method, r.path, nodeBody(2, "id", 1), http.StatusOK, api.MsgClusterOff)
	}
	c := e.Client()
	c.Header.Set("X-Cluster-Secret", "anything")
	c.Fail("POST", "/api/cluster/ping", nodeBody(2), http.StatusOK, api.MsgClusterOff)
	// Root is still needed first: a user learns nothing about the mode.
	u, _ := e.NewUser("clusteruser", user.RoleUser)
	u.Fail("GET", "/api/cluster_node/", nil, http.StatusOK, api.MsgNoPermission)
	c.Fail("POST", "/api/cluster/sync", map[string]any{"source_node_id": 2, "events": []any{}}, http.StatusOK, api.MsgClusterOff)
}

func TestClusterNodeAdmin(t *testing.T) {
	apptest.Parallel(t)
	e := clusterNode(t)
	root := e.Root()

	n := apptest.OKData[nodeInfo](root, "POST", "/api/cluster_node/", nodeBody(2, "address", " https://n2.example.com/ ", "node_name", " n2 "))
	if n.ID == 0 || n.NodeID != 2 || n.NodeName != "n2" || n.Address != "https://n2.example.com" || n.Status != cluster.StatusAlive ||
		n.Disabled || n.SecretKey == nil || *n.SecretKey != "peer-secret" || n.CreatedAt == 0 {
		t.Fatalf("created %+v", n)
	}

	for _, tc := range []struct {
		name string
		body any
		msg  string
	}{
		{"no node_id", map[string]any{"node_name": "x", "address": "http://x", "secret_key": "s"}, cluster.MsgNodeIDRange},
		{"node_id 0", nodeBody(0), cluster.MsgNodeIDRange},
		{"node_id 50", nodeBody(50), cluster.MsgNodeIDRange},
		{"node_id huge", `{"node_id":1e300,"node_name":"x","address":"http://x","secret_key":"s"}`, "无效的参数"},
		{"own node_id", nodeBody(1), api.MsgNodeIDSelf},
		{"taken node_id", nodeBody(2), api.MsgNodeExists},
		{"no name", nodeBody(3, "node_name", "  "), cluster.MsgNameRequired},
		{"name NUL", nodeBody(3, "node_name", "a\x00b"), "节点名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"name invalid UTF-8", `{"node_id":3,"node_name":"a\xffb","address":"http://x","secret_key":"s"}`, "无效的参数"},
		{"no scheme", nodeBody(3, "address", "n3:3000"), cluster.MsgAddressInvalid},
		{"user info", nodeBody(3, "address", "http://u:p@n3"), cluster.MsgAddressInvalid},
		{"no secret", nodeBody(3, "secret_key", ""), cluster.MsgSecretRequired},
		{"invalid JSON", "{", "无效的参数"},
	} {
		r := root.Do("POST", "/api/cluster_node/", tc.body)
		if r.Success || r.Message != tc.msg {
			t.Errorf("%s: got %s, want %q", tc.name, r.Raw, tc.msg)
		}
	}
	root.Fail("POST", "/api/cluster_node/", `{"node_name":"`+strings.Repeat("a", 2<<20)+`"}`, http.StatusRequestEntityTooLarge, "")
	if total := root.OK("GET", "/api/cluster_node/", nil).Total; total != 1 {
		t.Fatalf("failed creates saved rows: total %d", total)
	}

	// Parallel identical creates: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := root.Do("POST", "/api/cluster_node/", nodeBody(9)); r.Success {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if r.Message != api.MsgNodeExists {
				t.Errorf("parallel create: %s", r.Raw)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("parallel creates: %d won", wins)
	}

	list := root.OK("GET", "/api/cluster_node/?p=0", nil)
	var rows []nodeInfo
	list.Decode(t, &rows)
	if list.Total != 2 || len(rows) != 2 || rows[0].NodeID != 2 || rows[1].NodeID != 9 || rows[0].SecretKey == nil {
		t.Fatalf("list: %s", list.Raw)
	}
	if got := apptest.OKData[nodeInfo](root, "GET", apptest.Path("/api/cluster_node/%d", n.ID), nil); got.NodeID != 2 {
		t.Fatalf("get: %+v", got)
	}
	root.Fail("GET", "/api/cluster_node/999999", nil, http.StatusOK, api.MsgNodeNotFound)
	root.Fail("GET", "/api/cluster_node/abc", nil, http.StatusOK, "无效的ID")

	// Update: partial, checked whole, nothing saved on failure.
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"node_name": "x"}, http.StatusOK, api.MsgIDRequired)
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"id": 999999, "node_name": "x"}, http.StatusOK, api.MsgNodeNotFound)
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "node_id": 9}, http.StatusOK, api.MsgNodeIDTaken)
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "node_id": 1}, http.StatusOK, api.MsgNodeIDSelf)
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "address": "ftp://n2", "node_name": "changed"}, http.StatusOK, cluster.MsgAddressInvalid)
	root.Fail("PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "secret_key": ""}, http.StatusOK, cluster.MsgSecretRequired)
	if got := apptest.OKData[nodeInfo](root, "GET", apptest.Path("/api/cluster_node/%d", n.ID), nil); got.NodeName != "n2" || *got.SecretKey != "peer-secret" {
		t.Fatalf("a refused update changed the record: %+v", got)
	}
	up := apptest.OKData[nodeInfo](root, "PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "node_name": "renamed", "secret_key": "new-secret", "disabled": true})
	if up.NodeName != "renamed" || *up.SecretKey != "new-secret" || !up.Disabled || up.Address != "https://n2.example.com" || up.NodeID != 2 {
		t.Fatalf("update: %+v", up)
	}
	up = apptest.OKData[nodeInfo](root, "PUT", "/api/cluster_node/", map[string]any{"id": n.ID, "disabled": false})
	if up.Disabled || up.NodeName != "renamed" {
		t.Fatalf("update disabled: %+v", up)
	}

	// Soft delete and enable.
	del := apptest.OKData[nodeInfo](root, "DELETE", apptest.Path("/api/cluster_node/%d", n.ID), nil)
	if !del.Disabled || del.ID != n.ID {
		t.Fatalf("delete: %+v", del)
	}
	if total := root.OK("GET", "/api/cluster_node/", nil).Total; total != 2 {
		t.Fatalf("soft delete removed the record: total %d", total)
	}
	if en := apptest.OKData[nodeInfo](root, "POST", apptest.Path("/api/cluster_node/%d/enable", n.ID), nil); en.Disabled {
		t.Fatalf("enable: %+v", en)
	}
	root.Fail("DELETE", "/api/cluster_node/999999", nil, http.StatusOK, api.MsgNodeNotFound)
	root.Fail("POST", "/api/cluster_node/999999/enable", nil, http.StatusOK, api.MsgNodeNotFound)

	// Root only, by session or ROOT_ACCESS_TOKEN.
	admin, _ := e.NewUser("clusteradmin", user.RoleAdmin)
	admin.Fail("GET", "/api/cluster_node/", nil, http.StatusOK, api.MsgNoPermission)
	admin.Fail("POST", "/api/cluster_node/", nodeBody(5), http.StatusOK, api.MsgNoPermission)
	e.Client().Fail("GET", "/api/cluster_node/", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	if total := e.Client().Bearer(apptest.RootAccessToken).OK("GET", "/api/cluster_node/", nil).Total; total != 2 {
		t.Fatalf("token list total %d", total)
	}
}

// A diagnostic ping of an unreachable node answers the failure with its
// round trip, and records it.
func TestClusterNodeDiagnosticPing(t *testing.T) {
	apptest.Parallel(t)
	e := clusterNode(t)
	root := e.Root()
	dead := apptest.NewNode(t, 2, "two-secret-0123456789", "CLUSTER_PING_INTERVAL", "1h")
	addr := dead.URL()
	dead.Stop()
	n := apptest.OKData[nodeInfo](root, "POST", "/api/cluster_node/", nodeBody(2, "address", addr))
	type pingInfo struct {
		OK      bool     `json:"ok"`
		RTTMs   int64    `json:"rtt_ms"`
		Learned int      `json:"learned"`
		Error   string   `json:"error"`
		Node    nodeInfo `json:"node"`
	}
	got := apptest.OKData[pingInfo](root, "GET", apptest.Path("/api/cluster_node/ping/%d", n.ID), nil)
	if got.OK || got.Error == "" || got.Node.PingFailures != 1 || strings.Contains(got.Error, "peer-secret") {
		t.Fatalf("ping of a dead node: %+v", got)
	}
	root.Fail("GET", "/api/cluster_node/ping/999999", nil, http.StatusOK, api.MsgNodeNotFound)
}

func TestClusterPingEndpoint(t *testing.T) {
	apptest.Parallel(t)
	e := clusterNode(t)
	root := e.Root()
	apptest.OKData[nodeInfo](root, "POST", "/api/cluster_node/", nodeBody(5, "secret_key", "five-secret"))

	anon := e.Client()
	anon.Fail("POST", "/api/cluster/ping", nodeBody(2), http.StatusUnauthorized, api.MsgClusterSecret)
	for _, secret := range []string{nodeSecret + "x", strings.ToUpper(nodeSecret)} {
		c := e.Client().SignAs(2, "two-secret")
		c.Header.Set("X-Cluster-Secret", secret)
		c.Fail("POST", "/api/cluster/ping", nodeBody(2), http.StatusUnauthorized, api.MsgClusterSecret)
	}
	// This node's secret without the sender's headers.
	anon.Header.Set("X-Cluster-Secret", nodeSecret)
	anon.Fail("POST", "/api/cluster/ping", nodeBody(2), http.StatusUnauthorized, api.MsgClusterSecret)
	if total := root.OK("GET", "/api/cluster_node/", nil).Total; total != 1 {
		t.Fatalf("a refused ping recorded its sender: total %d", total)
	}

	// Node 2 is not in the table: its ping is heard, signed with its own
	// secret (which this node cannot check yet).
	peer := e.PeerClient(2, "two-secret")
	for _, tc := range []struct {
		name string
		body any
		msg  string
	}{
		{"no node_id", map[string]any{"node_name": "x", "address": "http://x", "secret_key": "s"}, cluster.MsgNodeIDRange},
		{"no name", nodeBody(2, "node_name", ""), cluster.MsgNameRequired},
		{"no address", nodeBody(2, "address", ""), cluster.MsgAddressInvalid},
		{"no secret", nodeBody(2, "secret_key", ""), cluster.MsgSecretRequired},
		{"this node's id", nodeBody(1), api.MsgClusterNodeSelf},
		{"invalid JSON", "[", "无效的参数"},
	} {
		if r := peer.Do("POST", "/api/cluster/ping", tc.body); r.Success || r.Message != tc.msg {
			t.Errorf("%s: got %s, want %q", tc.name, r.Raw, tc.msg)
		}
	}
	peer.Fail("POST", "/api/cluster/ping", `{"node_name":"`+strings.Repeat("a", 2<<20)+`"}`, http.StatusRequestEntityTooLarge, "")
	// The body speaks for the signing node only.
	peer.Fail("POST", "/api/cluster/ping", nodeBody(3), http.StatusUnauthorized, api.MsgClusterSecret)

	// Parallel pings of one new sender record it once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := peer.Do("POST", "/api/cluster/ping", nodeBody(2, "secret_key", "two-secret")); !r.Success {
				t.Errorf("ping: %s", r.Raw)
			}
		}()
	}
	wg.Wait()
	r := peer.OK("POST", "/api/cluster/ping", nodeBody(2, "secret_key", "two-secret"))
	if strings.Contains(string(r.Raw), "secret") {
		t.Fatalf("the ping answer shows secrets: %s", r.Raw)
	}
	var answer struct {
		Nodes []nodeInfo `json:"nodes"`
	}
	if err := json.Unmarshal(r.Data, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Nodes) != 2 || answer.Nodes[0].NodeID != 2 || answer.Nodes[1].NodeID != 5 {
		t.Fatalf("answer nodes: %s", r.Raw)
	}

	// The sender is recorded without the secret it sent, awaiting root's;
	// until then its pings change nothing.
	two := func() nodeInfo {
		var rows []nodeInfo
		root.OK("GET", "/api/cluster_node/", nil).Decode(t, &rows)
		return rows[0]
	}
	if n := two(); n.NodeID != 2 || *n.SecretKey != "" || n.State != cluster.StateAwaitingSecret || n.Address != "http://n2.example.com:3000" {
		t.Fatalf("recorded sender: %+v", n)
	}
	peer.OK("POST", "/api/cluster/ping", nodeBody(2, "address", "https://elsewhere.example.com"))
	if n := two(); n.Address != "http://n2.example.com:3000" || *n.SecretKey != "" {
		t.Fatalf("a ping of a node awaiting its secret changed it: %+v", n)
	}

	// Root sets the secret: the record is alive, and a ping signed with it
	// refreshes name, address and secret (spec, Cluster rule 3: how a
	// rotated secret spreads).
	if n := apptest.OKData[nodeInfo](root, "PUT", "/api/cluster_node/", map[string]any{"id": two().ID, "secret_key": "two-secret"}); n.State != cluster.StateAlive {
		t.Fatalf("completed record: %+v", n)
	}
	peer.OK("POST", "/api/cluster/ping", nodeBody(2, "secret_key", "rotated", "node_name", "two", "address", "https://two.example.com"))
	if n := two(); n.NodeName != "two" || n.Address != "https://two.example.com" || *n.SecretKey != "rotated" || n.Status != cluster.StatusAlive {
		t.Fatalf("recorded sender: %+v", n)
	}
	// Now only the new secret signs for node 2: the old one, another
	// node's, this node's own, and none are refused, and change nothing.
	for _, key := range []string{"two-secret", "five-secret", nodeSecret} {
		e.PeerClient(2, key).Fail("POST", "/api/cluster/ping", nodeBody(2, "address", "https://evil.example.com"),
			http.StatusUnauthorized, api.MsgClusterSecret)
	}
	anon.Fail("POST", "/api/cluster/ping", nodeBody(2, "address", "https://evil.example.com"), http.StatusUnauthorized, api.MsgClusterSecret)
	if n := two(); n.Address != "https://two.example.com" || *n.SecretKey != "rotated" {
		t.Fatalf("a refused ping changed the record: %+v", n)
	}
	e.PeerClient(2, "rotated").OK("POST", "/api/cluster/ping", nodeBody(2, "secret_key", "rotated", "node_name", "two", "address", "https://two.example.com"))
}
