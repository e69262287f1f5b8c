package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/user"
)

// clusterEnv is the environment of the test clusters: pushes every 100 ms,
// pings left to the tests.
var clusterEnv = []string{"CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms"}

// snapshotLines is node e's snapshot, line by line.
func snapshotLines(t *testing.T, e *apptest.Env) [][]byte {
	t.Helper()
	var lines [][]byte
	err := e.App.Replica.WriteSnapshot(context.Background(), func(line []byte) error {
		lines = append(lines, slices.Clone(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// tableRows is node e's data as its snapshot holds it: table → sorted row
// lines (every replicated table with counters, plan usage, row versions).
func tableRows(t *testing.T, e *apptest.Env) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range snapshotLines(t, e) {
		var r struct {
			Table string          `json:"table"`
			Row   json.RawMessage `json:"row"`
		}
		if json.Unmarshal(line, &r) != nil || r.Table == "" || r.Table == "cluster_parked" {
			continue
		}
		if r.Table == "users" || r.Table == "tokens" || r.Table == "channels" {
			// A balance change stamps updated_at on its own node only: the
			// delta event carries the amounts, not the time (a known
			// difference of replication, not of the join).
			var row map[string]json.RawMessage
			if err := json.Unmarshal(r.Row, &row); err != nil {
				t.Fatal(err)
			}
			delete(row, "updated_at")
			r.Row, _ = json.Marshal(row)
		}
		out[r.Table] = append(out[r.Table], string(r.Row))
	}
	for _, rows := range out {
		slices.Sort(rows)
	}
	return out
}

// sameData returns "" when a and b hold the same rows, else the first
// difference.
func sameData(a, b map[string][]string) string {
	for _, table := range []string{"users", "tokens", "channels", "model_prices", "group_prices", "options", "plans",
		"user_plans", "orders", "redemptions", "logs", "plan_usage", "plan_usage_totals", "cluster_versions"} {
		if !slices.Equal(a[table], b[table]) {
			return fmt.Sprintf("%s: %d rows vs %d rows\n%v\n%v", table, len(a[table]), len(b[table]), a[table], b[table])
		}
	}
	return ""
}

// pushedAll waits until node e has pushed every event of its outbox to
// peer.
func pushedAll(t *testing.T, e *apptest.Env, peer int) {
	t.Helper()
	apptest.Eventually(t, fmt.Sprintf("every event pushed to node %d", peer), func() bool {
		last, err := e.App.Replica.LastEventID(context.Background())
		cursors, err2 := e.App.Replica.ClusterCursors(context.Background())
		return err == nil && err2 == nil && cursors[peer] >= last
	})
}

func selfID(t *testing.T, c *apptest.Client) int64 {
	t.Helper()
	var me struct {
		ID   int64 `json:"id"`
		Role int   `json:"role"`
	}
	c.OK("GET", "/api/user/self", nil).Decode(t, &me)
	return me.ID
}

// TestClusterJoinNewNode: a new, empty node joins a two-node cluster with
// data from node 1's snapshot and ends with the same rows as node 1, its
// seeds replaced; what node 1 pushes afterwards (its whole outbox) applies
// once; changes flow both ways after.
func TestClusterJoinNewNode(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	up := fakeupstream.New(t)
	g := nodes[0].NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	root1, root2 := g.Root, nodes[1].Root()
	enableBank(root1)
	topupOn(root1)
	chat := map[string]any{"model": "gpt-test", "messages": []map[string]any{{"role": "user", "content": "hello"}}}
	if r := nodes[0].Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("relay call: %d %s", r.Status, r.Body)
	}
	nodes[0].SettleAll()
	plan := g.NewPlan("pro", apptest.PlanLimits{"gpt-test": {"period_h": 3, "request_period": 100}}, nil)
	g.Subscribe(g.UserID, plan, 30)
	order := topup(t, g.User, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	root1.OK("POST", apptest.Path("/api/order/%d/test_pay", order.Order.ID), nil)
	root1.OK("POST", "/api/redemption/", map[string]any{"name": "gift", "quota": 5000, "count": 2})
	// Node 2 writes too: its rows reach node 1, and so the snapshot.
	_, bob := nodes[1].NewUser("bob", user.RoleUser)
	root2.OK("POST", "/api/topup", map[string]any{"user_id": bob, "quota": 7000})
	root2.OK("POST", "/api/group_price/", map[string]any{"group_name": "gold", "discount": 0.8})
	apptest.Eventually(t, "bob on node 1", func() bool {
		u, ok := userOn(t, root1, bob)
		return ok && u.Quota == 7000
	})
	// A top-up on node 1 before the join: in the snapshot, and pushed again
	// after it with node 1's whole outbox; it must count once.
	root1.OK("POST", "/api/topup", map[string]any{"user_id": bob, "quota": 1000})
	apptest.Eventually(t, "node 2's writes on node 1", func() bool {
		u, ok := userOn(t, root1, bob)
		return ok && u.Quota == 8000
	})
	pushedAll(t, nodes[1], 1)

	node3 := apptest.NewNode(t, 3, apptest.NodeSecret(3), clusterEnv...)
	root3 := node3.Root()
	seedRoot := selfID(t, root3)
	nodes[0].AddTo(root3, 1)
	node3.AddTo(root1, 3)
	token := nodes[0].JoinToken(3)
	var joined struct {
		SourceNodeID int              `json:"source_node_id"`
		Rows         int64            `json:"rows"`
		Positions    map[string]int64 `json:"positions"`
	}
	join := apptest.Path("/api/cluster_node/%d/join", nodeRecordID(t, root3, 1))
	root3.OK("POST", join, map[string]any{"token": token}).Decode(t, &joined)
	if joined.SourceNodeID != 1 || joined.Rows == 0 || joined.Positions["1"] == 0 || joined.Positions["2"] == 0 {
		t.Fatalf("join answer %+v", joined)
	}
	// The seeds are gone: the root is node 1's.
	root3 = node3.Root()
	if got, want := selfID(t, root3), selfID(t, root1); got != want || got == seedRoot {
		t.Fatalf("root on node 3 is user %d, want node 1's root %d (seed root %d)", got, want, seedRoot)
	}
	if _, ok := userOn(t, root3, seedRoot); ok {
		t.Fatalf("node 3's seeded root %d is still there", seedRoot)
	}
	// Complete the cluster: node 1 and 2 push to node 3 from the start of
	// their outboxes, node 3 to node 2.
	node3.AddTo(root1, 3)
	node3.AddTo(root2, 3)
	nodes[1].AddTo(root3, 2)
	pushedAll(t, nodes[0], 3)
	pushedAll(t, nodes[1], 3)
	if d := sameData(tableRows(t, nodes[0]), tableRows(t, node3)); d != "" {
		t.Fatalf("node 3 differs from node 1 after the join: %s", d)
	}
	if u, _ := userOn(t, root3, bob); u.Quota != 8000 {
		t.Fatalf("bob's quota on node 3 is %d, want 8000 (no top-up counted twice)", u.Quota)
	}
	// Derived on node 3: abilities route the relay there.
	if r := node3.Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("relay call on node 3: %d %s", r.Status, r.Body)
	}
	node3.SettleAll()
	// Changes after the join flow both ways.
	root1.OK("POST", "/api/topup", map[string]any{"user_id": bob, "quota": 500})
	_, carol := node3.NewUser("carol", user.RoleUser)
	for i, root := range []*apptest.Client{root1, root2, root3} {
		apptest.Eventually(t, fmt.Sprintf("the changes after the join on node %d", i+1), func() bool {
			b, _ := userOn(t, root, bob)
			c, ok := userOn(t, root, carol)
			return b.Quota == 8500 && ok && c.Username == "carol"
		})
	}
	pushedAll(t, node3, 1)
	pushedAll(t, nodes[0], 3)
	if d := sameData(tableRows(t, nodes[0]), tableRows(t, node3)); d != "" {
		t.Fatalf("node 3 differs from node 1 after later changes: %s", d)
	}
}

// TestClusterJoinRefusals: a node with data of its own, a peer without a
// secret, a disabled one, an unreachable one and a wrong secret are refused
// with clear messages, and nothing changes.
func TestClusterJoinRefusals(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 1)
	root1 := nodes[0].Root()
	root1.OK("POST", "/api/group_price/", map[string]any{"group_name": "gold", "discount": 0.8})

	used := apptest.NewNode(t, 3, apptest.NodeSecret(3), clusterEnv...)
	rootU := used.Root()
	_, id := used.NewUser("local", user.RoleUser)
	nodes[0].AddTo(rootU, 1)
	used.AddTo(root1, 3)
	rootU.Fail("POST", apptest.Path("/api/cluster_node/%d/join", nodeRecordID(t, rootU, 1)), map[string]any{"token": nodes[0].JoinToken(3)},
		http.StatusOK, api.MsgJoinNotFresh)
	if _, ok := userOn(t, rootU, id); !ok {
		t.Fatal("the refused join removed the node's own user")
	}

	fresh := apptest.NewNode(t, 4, apptest.NodeSecret(4), clusterEnv...)
	root4 := fresh.Root()
	// A peer that does not answer: the message names its address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	root4.OK("POST", "/api/cluster_node/", map[string]any{"node_id": 9, "node_name": "gone", "address": dead, "secret_key": "s"})
	r := root4.Do("POST", apptest.Path("/api/cluster_node/%d/join", nodeRecordID(t, root4, 9)), map[string]any{"token": "t"})
	if r.Success || !strings.Contains(r.Message, dead) || strings.Contains(r.Message, "secret") {
		t.Fatalf("join from an unreachable peer: %+v", r)
	}
	// A wrong secret: the peer refuses, the message says so.
	root4.OK("POST", "/api/cluster_node/", map[string]any{"node_id": 1, "node_name": "node-1", "address": nodes[0].URL(), "secret_key": "wrong"})
	rec := nodeRecordID(t, root4, 1)
	fresh.AddTo(root1, 4)
	token := nodes[0].JoinToken(4)
	r = root4.Do("POST", apptest.Path("/api/cluster_node/%d/join", rec), map[string]any{"token": token})
	if r.Success || !strings.Contains(r.Message, nodes[0].URL()) || !strings.Contains(r.Message, "401") || strings.Contains(r.Message, "wrong") {
		t.Fatalf("join with a wrong secret: %+v", r)
	}
	// Disabled.
	root4.OK("PUT", "/api/cluster_node/", map[string]any{"id": rec, "secret_key": apptest.NodeSecret(1)})
	root4.OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)
	root4.Fail("POST", apptest.Path("/api/cluster_node/%d/join", rec), map[string]any{"token": token}, http.StatusOK, api.MsgJoinDisabled)
	// The node still has its seeds, and joins once enabled.
	if got := selfID(t, root4); got%50 != 4 {
		t.Fatalf("root of node 4 is %d after the refusals", got)
	}
	root4.OK("POST", apptest.Path("/api/cluster_node/%d/enable", rec), nil)
	// A join needs the token; one created for another node opens nothing.
	root4.Fail("POST", apptest.Path("/api/cluster_node/%d/join", rec), nil, http.StatusOK, "无效的参数")
	root4.Fail("POST", apptest.Path("/api/cluster_node/%d/join", rec), map[string]any{"token": " "}, http.StatusOK, api.MsgJoinTokenRequired)
	r = root4.Do("POST", apptest.Path("/api/cluster_node/%d/join", rec), map[string]any{"token": nodes[0].JoinToken(3)})
	if r.Success || !strings.Contains(r.Message, "401") {
		t.Fatalf("join with node 3's token: %+v", r)
	}
	root4.OK("POST", apptest.Path("/api/cluster_node/%d/join", rec), map[string]any{"token": token})
	if got := selfID(t, fresh.Root()); got%50 != 1 {
		t.Fatalf("root of node 4 after the join is %d, want node 1's", got)
	}

	// The snapshot route itself: the secret opens it.
	c := nodes[0].Client()
	c.Header.Set("X-Cluster-Secret", "wrong")
	c.Fail("POST", "/api/cluster/snapshot", nil, http.StatusUnauthorized, api.MsgClusterSecret)
}

// TestClusterJoinCutSnapshot: LoadSnapshot commits only a whole snapshot:
// a stream cut anywhere, or with a garbled line, changes nothing, and the
// node can then load the whole one.
func TestClusterJoinCutSnapshot(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 1)
	nodes[0].NewUser("alice", user.RoleUser)
	lines := snapshotLines(t, nodes[0])
	if len(lines) < 5 {
		t.Fatalf("snapshot of %d lines", len(lines))
	}
	node3 := apptest.NewNode(t, 3, apptest.NodeSecret(3), clusterEnv...)
	before := tableRows(t, node3)
	garbled := func(i int, line string) [][]byte {
		out := slices.Clone(lines)
		out[i] = []byte(line)
		return out
	}
	cases := []struct {
		name  string
		lines [][]byte
		// readErr, when set, is what reading the third line gives.
		readErr error
		want    error
	}{
		{"no end line", lines[:len(lines)-1], nil, replica.ErrBadSnapshot},
		{"cut in the rows", append(slices.Clone(lines[:3]), lines[len(lines)-1]), nil, replica.ErrBadSnapshot},
		{"header only", lines[:1], nil, replica.ErrBadSnapshot},
		{"empty", nil, nil, replica.ErrBadSnapshot},
		{"not JSON", garbled(2, `{"table":"users","row":{`), nil, replica.ErrBadSnapshot},
		{"unknown table", garbled(2, `{"table":"secrets","row":{"id":1}}`), nil, replica.ErrBadSnapshot},
		{"row without key", garbled(2, `{"table":"users","row":{"username":"x"}}`), nil, replica.ErrBadSnapshot},
		{"bad header", garbled(0, `{"node_id":0,"positions":{}}`), nil, replica.ErrBadSnapshot},
		{"connection lost", lines, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := 0
			_, _, err := node3.App.Replica.LoadSnapshot(context.Background(), func() ([]byte, error) {
				if c.readErr != nil && i == 2 {
					return nil, c.readErr
				}
				if i >= len(c.lines) {
					return nil, io.EOF
				}
				i++
				return c.lines[i-1], nil
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if d := sameData(before, tableRows(t, node3)); d != "" {
				t.Fatalf("a refused snapshot changed the data: %s", d)
			}
		})
	}
	i := 0
	if _, _, err := node3.App.Replica.LoadSnapshot(context.Background(), func() ([]byte, error) {
		if i >= len(lines) {
			return nil, io.EOF
		}
		i++
		return lines[i-1], nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := sameData(tableRows(t, nodes[0]), tableRows(t, node3)); d != "" {
		t.Fatalf("after the whole snapshot: %s", d)
	}
}
