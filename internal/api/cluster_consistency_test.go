package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/cluster/consistency"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/user"
)

// consistencyOf runs the consistency check on the node root administers.
func consistencyOf(t *testing.T, root *apptest.Client) consistency.Report {
	t.Helper()
	return apptest.OKData[consistency.Report](root, "GET", "/api/cluster/consistency", nil)
}

// differing is the differing tables per peer node id, "!" for a peer not
// caught up or not answering.
func differing(rep consistency.Report) map[int]string {
	out := map[int]string{}
	for _, p := range rep.Peers {
		s := strings.Join(p.Differing, ",")
		if !p.OK || !p.CaughtUp {
			s = "!" + s + p.Error
		}
		out[p.NodeID] = s
	}
	return out
}

// settled waits until every node pushed every event to every other.
func settled(t *testing.T, nodes []*apptest.Env) {
	t.Helper()
	for i, e := range nodes {
		for j := range nodes {
			if i != j {
				pushedAll(t, e, j+1)
			}
		}
	}
}

// TestClusterConsistencyCheck: a converged three-node cluster reports no
// difference (each node's seeds, never replicated, are not compared); a
// row changed behind replication's back on one node shows as exactly its
// table, against that node only.
func TestClusterConsistencyCheck(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	_, alice := c.nodes[0].NewUser("alice", user.RoleUser)
	c.onAll(t, "alice", func(root *apptest.Client) bool { _, ok := userOn(t, root, alice); return ok })
	c.roots[1].OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 2500})
	c.roots[2].OK("POST", "/api/group_price/", map[string]any{"group_name": "gold", "discount": 0.8})
	c.roots[0].OK("POST", "/api/redemption/", map[string]any{"name": "gift", "quota": 5000, "count": 2})
	c.onAll(t, "alice's top-up", func(root *apptest.Client) bool {
		u, ok := userOn(t, root, alice)
		return ok && u.Quota == 2500
	})
	// A relay call on node 1 and one on node 2: consume logs, key and
	// channel counters, balances charged on two nodes.
	up := fakeupstream.New(t)
	g := c.nodes[0].NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	chat := map[string]any{"model": "gpt-test", "messages": []map[string]any{{"role": "user", "content": "hello"}}}
	if r := c.nodes[0].Call(g.Key, "POST", "/v1/chat/completions", chat); r.Status != http.StatusOK {
		t.Fatalf("relay call: %d %s", r.Status, r.Body)
	}
	c.nodes[0].SettleAll()
	settled(t, c.nodes)
	apptest.Eventually(t, "the relay call on node 2", func() bool {
		return c.nodes[1].Call(g.Key, "POST", "/v1/chat/completions", chat).Status == http.StatusOK
	})
	c.nodes[1].SettleAll()
	settled(t, c.nodes)

	rep := consistencyOf(t, c.roots[0])
	if !rep.Consistent || len(rep.Peers) != 2 {
		t.Fatalf("converged cluster: %+v", rep)
	}
	for _, p := range rep.Peers {
		i := slices.IndexFunc(p.Tables, func(tb consistency.Table) bool { return tb.Table == "users" })
		if i < 0 || p.Tables[i].RowsHere != 2 || p.Tables[i].RowsPeer != 2 || !p.Tables[i].Equal {
			t.Fatalf("users with node %d: %+v (alice and the gateway's user: the roots are seeds)", p.NodeID, p.Tables)
		}
		if p.PositionsHere["2"] == 0 || p.PositionsHere["3"] == 0 {
			t.Fatalf("positions %v", p.PositionsHere)
		}
	}

	// Behind replication's back on node 2.
	c.nodes[1].ExecSQL(fmt.Sprintf("UPDATE users SET display_name = 'tampered' WHERE id = %d", alice))
	rep = consistencyOf(t, c.roots[0])
	if got := differing(rep); rep.Consistent || got[2] != "users" || got[3] != "" {
		t.Fatalf("after the change on node 2, from node 1: %v", got)
	}
	if got := differing(consistencyOf(t, c.roots[2])); got[2] != "users" || got[1] != "" {
		t.Fatalf("from node 3: %v", got)
	}
	// The digest endpoint is opened by the cluster secret only.
	c.nodes[0].Client().Fail("POST", "/api/cluster/digest", map[string]any{}, 401, api.MsgClusterSecret)
}

// TestClusterResync: node 2 misses node 1's events (down while node 1
// wrote, and node 1 pruned them), writes one of its own node 1 has not
// received, then resyncs from node 1's snapshot: both end equal, the
// top-ups counted once each, node 2's root unchanged.
func TestClusterResync(t *testing.T) {
	// Not parallel: its pause, prune and resume choreography assumes the
	// paused node took no push in flight, which a loaded machine breaks.
	nodes := apptest.NewCluster(t, 2)
	a, b := nodes[0], nodes[1]
	rootA, rootB := a.Root(), b.Root()
	rootBID := selfID(t, rootB)
	_, alice := a.NewUser("alice", user.RoleUser)
	apptest.Eventually(t, "alice on node 2", func() bool { _, ok := userOn(t, rootB, alice); return ok })

	b.Pause()
	rootA.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 1000})
	_, dave := a.NewUser("dave", user.RoleUser)
	rootA.OK("POST", "/api/model_price/", map[string]any{"model_name": "m-resync", "input_price": 1, "output_price": 2})
	// Node 1 prunes what node 2 never acknowledged (as 7 days would).
	ctx := context.Background()
	future := time.Now().Add(time.Hour).Unix()
	if _, err := a.App.Replica.PruneEvents(ctx, 1<<62, future, future); err != nil {
		t.Fatal(err)
	}
	prunedPushesEnded(t, rootA, 2)
	b.Resume()
	// Node 2 can never catch up on node 1 now: the check says so rather
	// than call the missing rows a difference.
	rep := consistencyOf(t, rootA)
	if len(rep.Peers) != 1 || rep.Consistent || rep.Peers[0].CaughtUp || !rep.Peers[0].OK {
		t.Fatalf("before the resync: %+v", rep)
	}
	if got := rep.Peers[0].Differing; !slices.Contains(got, "users") || !slices.Contains(got, "model_prices") {
		t.Fatalf("before the resync, differing %v", got)
	}
	a.Pause()
	// Node 2's own change, not received by node 1 yet (it is down).
	rootB.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 300})
	time.Sleep(300 * time.Millisecond) // a failed push or two: the pusher backs off
	a.Resume()
	if _, ok := userOn(t, rootB, dave); ok {
		t.Fatal("dave reached node 2 although his events were pruned")
	}

	var res struct {
		SourceNodeID int              `json:"source_node_id"`
		Rows         int64            `json:"rows"`
		Positions    map[string]int64 `json:"positions"`
		Replayed     int              `json:"replayed"`
	}
	path := apptest.Path("/api/cluster_node/%d/resync", nodeRecordID(t, rootB, 1))
	rootB.Fail("POST", path, map[string]any{}, http.StatusOK, api.MsgJoinTokenRequired)
	rootB.OK("POST", path, map[string]any{"token": a.JoinToken(2)}).Decode(t, &res)
	if res.SourceNodeID != 1 || res.Rows == 0 || res.Positions["1"] == 0 {
		t.Fatalf("resync answer %+v", res)
	}
	t.Logf("resync: %d rows, %d own events replayed", res.Rows, res.Replayed)
	// Node 2's root and its session go on.
	if got := selfID(t, rootB); got != rootBID {
		t.Fatalf("node 2's root is user %d after the resync, want %d", got, rootBID)
	}
	if got := selfID(t, b.Root()); got != rootBID {
		t.Fatalf("a new login on node 2 is user %d, want %d", got, rootBID)
	}
	settled(t, nodes)
	for i, root := range []*apptest.Client{rootA, rootB} {
		apptest.Eventually(t, fmt.Sprintf("alice's balance on node %d", i+1), func() bool {
			u, ok := userOn(t, root, alice)
			return ok && u.Quota == 1300
		})
		if _, ok := userOn(t, root, dave); !ok {
			t.Fatalf("dave is not on node %d", i+1)
		}
	}
	for i, root := range []*apptest.Client{rootA, rootB} {
		if rep := consistencyOf(t, root); !rep.Consistent {
			t.Fatalf("node %d after the resync: %v", i+1, differing(rep))
		}
	}
	// Later changes flow both ways.
	rootA.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 5})
	rootB.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 7})
	for i, root := range []*apptest.Client{rootA, rootB} {
		apptest.Eventually(t, fmt.Sprintf("later top-ups on node %d", i+1), func() bool {
			u, _ := userOn(t, root, alice)
			return u.Quota == 1312
		})
	}
}

// TestClusterFailedAndParkedEvents: the root lists show a parked delta and
// an event the database refused, with their metadata and never their
// data; a dismissed failed event is gone.
func TestClusterFailedAndParkedEvents(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	a, b := newSource(t, 7), newSource(t, 8)
	toRecv, toA := syncer(recv, apptest.NodeSecret(1), 7), syncer(a.env, apptest.NodeSecret(7), 8)
	_, uid := b.env.NewUser("latecomer", user.RoleUser)
	push(t, toA, 8, b.events(t, 0, ""))
	a.root.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 4321})
	// Node 7's whole stream (its seq starts at 1 here): the top-up's delta
	// arrives before the user's INSERT from node 8, and parks.
	push(t, toRecv, 7, a.events(t, 0, ""))

	type parked struct {
		ID         int64  `json:"id"`
		NodeID     int    `json:"node_id"`
		Table      string `json:"table"`
		PrimaryKey int64  `json:"primary_key"`
	}
	r := root.OK("GET", "/api/cluster/parked_events?p=0", nil)
	var ps []parked
	r.Decode(t, &ps)
	if r.Total != 1 || len(ps) != 1 || ps[0].NodeID != 7 || ps[0].Table != "users" || ps[0].PrimaryKey != uid {
		t.Fatalf("parked: %s", r.Raw)
	}
	if strings.Contains(string(r.Raw), "4321") {
		t.Fatalf("the parked list shows the delta's data: %s", r.Raw)
	}

	// An event the database refuses for its values: on SQLite a log a
	// trigger refuses, on PostgreSQL and MySQL a username longer than its
	// column (SQLite keeps any length). Its id is the one after node 7's
	// last event, which recv's applied mark holds.
	id := a.last(t) + 50
	poison := replicate.Event{ID: id, TableName: "logs", Operation: "INSERT", PrimaryKey: id, EventTimeUS: time.Now().UnixMicro(),
		EventTime: time.Now().Unix(),
		Data:      []byte(fmt.Sprintf(`{"id":%d,"user_id":1,"type":2,"content":"secret-content","request_id":"poison","created_at":1}`, id))}
	table := "logs"
	if recv.Engine() == "sqlite" {
		create, drop := storetest.PoisonLogTrigger(recv.Engine())
		recv.ExecSQL(create...)
		t.Cleanup(func() { recv.ExecSQL(drop) })
	} else {
		table = "users"
		poison.TableName = "users"
		poison.Data = []byte(fmt.Sprintf(`{"id":%d,"username":"%s","password_hash":"secret-content","aff_code":"p1"}`,
			id, strings.Repeat("x", 300)))
	}
	if got := push(t, toRecv, 7, []replicate.Event{poison}); got.Skipped != 1 {
		t.Fatalf("poison event: %+v", got)
	}
	r = root.OK("GET", "/api/cluster/failed_events", nil)
	var fs []map[string]any
	r.Decode(t, &fs)
	if r.Total != 1 || len(fs) != 1 || fs[0]["id"] != float64(id) || fs[0]["node_id"] != 7.0 || fs[0]["table"] != table ||
		fs[0]["operation"] != "INSERT" || fs[0]["primary_key"] != float64(id) || fs[0]["error"] == "" {
		t.Fatalf("failed events: %s", r.Raw)
	}
	if strings.Contains(string(r.Raw), "secret-content") {
		t.Fatalf("the failed list shows the event's data: %s", r.Raw)
	}
	root.OK("DELETE", apptest.Path("/api/cluster/failed_events/%d", id), nil)
	root.Fail("DELETE", apptest.Path("/api/cluster/failed_events/%d", id), nil, 200, api.MsgFailedEventNotFound)
	if r := root.OK("GET", "/api/cluster/failed_events", nil); r.Total != 0 {
		t.Fatalf("after dismissing: %s", r.Raw)
	}
	// Root only.
	user, _ := recv.NewUser("plain", user.RoleUser)
	if r := user.Do("GET", "/api/cluster/failed_events", nil); r.Success {
		t.Fatalf("a user read the failed events: %s", r.Raw)
	}
}

// TestClusterResyncOwnEventsGone: a resync that would lose this node's own
// events (gone from its outbox before the source applied them) is refused
// unless forced; forced, the node takes the source's data.
func TestClusterResyncOwnEventsGone(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	a, b := nodes[0], nodes[1]
	rootA, rootB := a.Root(), b.Root()
	_, alice := a.NewUser("alice", user.RoleUser)
	apptest.Eventually(t, "alice on node 2", func() bool { _, ok := userOn(t, rootB, alice); return ok })
	// Node 1 acknowledges a change of node 2's first: node 2's cursor for
	// node 1 is set, so the prune below makes node 1 need a resync there.
	rootB.OK("POST", "/api/model_price/", map[string]any{"model_name": "m-own-gone", "input_price": 1, "output_price": 2})
	apptest.Eventually(t, "node 1 acknowledged node 2's price", func() bool { return replicationOf(t, rootB, 1).AckedSeq != 0 })
	a.Pause()
	rootB.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 300})
	future := time.Now().Add(time.Hour).Unix()
	if _, err := b.App.Replica.PruneEvents(context.Background(), 1<<62, future, future); err != nil {
		t.Fatal(err)
	}
	prunedPushesEnded(t, rootB, 1)
	a.Resume()
	path := apptest.Path("/api/cluster_node/%d/resync", nodeRecordID(t, rootB, 1))
	rootB.Fail("POST", path, map[string]any{"token": a.JoinToken(2)}, 200, api.MsgResyncOwnPruned)
	if u, _ := userOn(t, rootB, alice); u.Quota != 300 {
		t.Fatalf("a refused resync changed the data: quota %d", u.Quota)
	}
	rootB.OK("POST", path, map[string]any{"force": true, "token": a.JoinToken(2)})
	if u, _ := userOn(t, rootB, alice); u.Quota != 0 {
		t.Fatalf("after a forced resync alice has %d, want node 1's 0", u.Quota)
	}
	// The data agree, but node 1 never applied node 2's lost events: the
	// positions never meet, and the check says so.
	rep := consistencyOf(t, rootA)
	if p := rep.Peers[0]; !p.OK || p.CaughtUp || len(p.Differing) != 0 || rep.Consistent {
		t.Fatalf("after the forced resync: %+v", rep)
	}
	// Node 1 refuses node 2's later events (a gap: the lost ones); node 2
	// shows node 1 as needing a resync. The way back: node 1 resyncs from
	// node 2, and the stream flows again both ways.
	rootB.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 40})
	apptest.Eventually(t, "node 1 shown as needing a resync on node 2", func() bool {
		return replicationOf(t, rootB, 1).State == "needs_resync"
	})
	rootA.OK("POST", apptest.Path("/api/cluster_node/%d/resync", nodeRecordID(t, rootA, 2)),
		map[string]any{"token": b.JoinToken(1)})
	rootB.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 2})
	rootA.OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 5})
	apptest.Eventually(t, "the top-ups on both nodes", func() bool {
		ua, _ := userOn(t, rootA, alice)
		ub, _ := userOn(t, rootB, alice)
		return ua.Quota == 47 && ub.Quota == 47
	})
	apptest.Eventually(t, "node 1 no longer needing a resync", func() bool {
		return replicationOf(t, rootB, 1).State != "needs_resync"
	})
	if rep := consistencyOf(t, rootA); !rep.Consistent {
		t.Fatalf("after node 1 resynced from node 2: %+v", rep)
	}
}

// With CLUSTER_SYNC_LOGS=false logs stay per node: they are not compared.
func TestClusterConsistencyWithoutLogs(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2, "CLUSTER_SYNC_LOGS", "false")
	_, alice := nodes[0].NewUser("alice", user.RoleUser)
	nodes[0].Root().OK("POST", "/api/topup", map[string]any{"user_id": alice, "quota": 100}) // a top-up log on node 1 only
	settled(t, nodes)
	rep := consistencyOf(t, nodes[1].Root())
	if !rep.Consistent || slices.ContainsFunc(rep.Peers[0].Tables, func(tb consistency.Table) bool { return tb.Table == "logs" }) {
		t.Fatalf("logs off: %+v", rep)
	}
}

// prunedPushesEnded waits until root's node shows peer nodeID as needing a
// resync after a test pruned its whole outbox while the peer was paused.
// Only a push round that read the outbox after the prune says so, and a
// node runs one round per peer at a time: no round that read the pruned
// events before the prune is still in flight, to deliver them once the
// peer resumes (which happened on a loaded machine: the peer then held
// the events the test meant it to miss).
func prunedPushesEnded(t *testing.T, root *apptest.Client, nodeID int) {
	t.Helper()
	apptest.Eventually(t, fmt.Sprintf("node %d shown as needing a resync after the prune", nodeID), func() bool {
		return replicationOf(t, root, nodeID).State == "needs_resync"
	})
}
