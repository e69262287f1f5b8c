package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// The cluster's trust model (issue 24 §1, docs/cluster.md, Security): each
// attack seen on main, made with node 1's CLUSTER_SECRET alone, is refused
// and changes nothing.

// recordPeer records node id with its secret in the table root
// administers, at an address nothing answers: the node hears it and
// pushes it nothing.
func recordPeer(root *apptest.Client, id int) {
	root.OK("POST", "/api/cluster_node/", map[string]any{"node_id": id, "node_name": fmt.Sprintf("node-%d", id),
		"address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(id)})
}

// userEvent is a row event of the users table from node src (sequence seq).
func userEvent(src int, seq int64, op string, id int64, row map[string]any) replicate.Event {
	data := json.RawMessage("{}")
	if row != nil {
		row["id"] = id
		data, _ = json.Marshal(row)
	}
	now := time.Now()
	return replicate.Event{ID: seq*50 + int64(src), TableName: "users", Operation: op, PrimaryKey: id, Data: data,
		EventTime: now.Unix(), EventTimeUS: now.UnixMicro()}
}

// newUserRow is a whole users row as an INSERT carries it.
func newUserRow(name string, role int, quota int64) map[string]any {
	return map[string]any{"username": name, "password_hash": "x", "display_name": name, "role": role,
		"status": user.StatusEnabled, "quota": quota, "user_group": "default", "aff_code": name, "session_version": 1}
}

func refusedCount(t *testing.T, e *apptest.Env, reason string) float64 {
	t.Helper()
	v, _ := e.Scrape().Value("modelgate_cluster_auth_refused_total", "reason", reason)
	return v
}

// TestClusterTrustForgedSync: a sync batch is heard only from a node of
// the table, enabled, with a secret, signed with that secret, fresh, and
// speaking for itself. The report's batch (a new root with a huge quota,
// and a DELETE of node 1's root) is refused in every forged form; signed
// by a real peer its root changes are still skipped.
func TestClusterTrustForgedSync(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2, "METRICS_TOKEN", apptest.MetricsToken)
	n1, root1 := nodes[0], nodes[0].Root()
	rootID := selfID(t, root1)
	recordPeer(root1, 9)
	const mallory = int64(777*50 + 9)
	batch := func(src int) replicate.Batch {
		return replicate.Batch{SourceNodeID: src, Events: []replicate.Event{
			userEvent(src, 1, "INSERT", mallory-9+int64(src), newUserRow("mallory", user.RoleRoot, 1e15)),
			userEvent(src, 2, "DELETE", rootID, nil),
		}}
	}
	// Node 8 pinged once: recorded, awaiting its secret.
	n1.PeerClient(8, apptest.NodeSecret(8)).OK("POST", "/api/cluster/ping", map[string]any{"node_id": 8, "node_name": "node-8",
		"address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(8)})
	unsigned := n1.Client()
	unsigned.Header.Set(peer.SecretHeader, apptest.NodeSecret(1))
	unsigned.Header.Set(peer.NodeHeader, "2")
	unsigned.Header.Set(peer.TimestampHeader, strconv.FormatInt(time.Now().Unix(), 10))
	attacks := []struct {
		name, reason string
		c            *apptest.Client
		src          int
	}{
		{"a node in no table", "unknown_node", n1.PeerClient(7, apptest.NodeSecret(7)), 7},
		{"node 2, unsigned", "no_signature", unsigned, 2},
		{"node 2, signed with node 1's secret", "bad_signature", n1.PeerClient(2, apptest.NodeSecret(1)), 2},
		{"node 2, a stale timestamp", "stale_timestamp", n1.Client().SignAsAt(2, apptest.NodeSecret(2), time.Now().Add(-301*time.Second)), 2},
		{"node 2 pushing node 9's events", "source_mismatch", n1.PeerClient(2, apptest.NodeSecret(2)), 9},
		{"node 8, awaiting its secret", "no_secret", n1.PeerClient(8, apptest.NodeSecret(8)), 8},
	}
	attacks[3].c.Header.Set(peer.SecretHeader, apptest.NodeSecret(1))
	for _, a := range attacks {
		before := refusedCount(t, n1, a.reason)
		a.c.Fail("POST", "/api/cluster/sync", batch(a.src), http.StatusUnauthorized, api.MsgClusterSecret)
		if after := refusedCount(t, n1, a.reason); after != before+1 {
			t.Errorf("%s: refusals counted for %s went %v → %v", a.name, a.reason, before, after)
		}
	}
	// A disabled peer is not heard either.
	nine := nodeRecordID(t, root1, 9)
	root1.OK("DELETE", apptest.Path("/api/cluster_node/%d", nine), nil)
	n1.PeerClient(9, apptest.NodeSecret(9)).Fail("POST", "/api/cluster/sync", batch(9), http.StatusUnauthorized, api.MsgClusterSecret)
	root1.OK("POST", apptest.Path("/api/cluster_node/%d/enable", nine), nil)
	for _, id := range []int64{mallory - 9 + 7, mallory - 9 + 2, mallory - 9 + 8, mallory} {
		if _, ok := userOn(t, root1, id); ok {
			t.Fatalf("a refused batch created user %d", id)
		}
	}
	if u, ok := userOn(t, root1, rootID); !ok || u.Role != user.RoleRoot {
		t.Fatalf("node 1's root after the refused batches: %+v, %v", u, ok)
	}

	// Signed by a real peer: the user arrives, but not as root, and the
	// root stays (Root is per node, below).
	a := apptest.OKData[replicate.Answer](n1.PeerClient(9, apptest.NodeSecret(9)), "POST", "/api/cluster/sync", batch(9))
	if a != (replicate.Answer{Skipped: 2}) {
		t.Fatalf("the batch from node 9: %+v", a)
	}
	if _, ok := userOn(t, root1, mallory); ok {
		t.Fatal("a peer's event created a root")
	}
	// Replication between the real nodes goes on.
	_, bob := nodes[1].NewUser("bob", user.RoleUser)
	apptest.Eventually(t, "node 2's user on node 1", func() bool {
		_, ok := userOn(t, root1, bob)
		return ok
	})
}

// TestClusterRootIsPerNode: properly signed events of a real peer never
// delete, disable or demote this node's root, make a root or promote a
// user to root; they are skipped, the rest of the batch applies, and the
// root's other changes (its name) apply.
func TestClusterRootIsPerNode(t *testing.T) {
	apptest.Parallel(t)
	n1 := apptest.NewCluster(t, 1)[0]
	root1 := n1.Root()
	rootID := selfID(t, root1)
	_, alice := n1.NewUser("alice", user.RoleUser)
	recordPeer(root1, 9)
	evs := []replicate.Event{
		userEvent(9, 1, "DELETE", rootID, nil),
		userEvent(9, 2, "UPDATE", rootID, map[string]any{"status": user.StatusDisabled}),
		userEvent(9, 3, "UPDATE", rootID, map[string]any{"role": user.RoleAdmin}),
		userEvent(9, 4, "INSERT", 103*50+9, newUserRow("eve", user.RoleRoot, 1e12)),
		userEvent(9, 5, "UPDATE", alice, map[string]any{"role": user.RoleRoot}),
		userEvent(9, 6, "UPDATE", rootID, map[string]any{"display_name": "renamed", "role": user.RoleRoot, "status": user.StatusEnabled}),
		userEvent(9, 7, "INSERT", 106*50+9, newUserRow("frank", user.RoleUser, 10)),
	}
	a := apptest.OKData[replicate.Answer](n1.PeerClient(9, apptest.NodeSecret(9)), "POST", "/api/cluster/sync",
		replicate.Batch{SourceNodeID: 9, Events: evs})
	if a != (replicate.Answer{Applied: 2, Skipped: 5}) {
		t.Fatalf("answer %+v, want 2 applied and 5 skipped", a)
	}
	byToken := n1.Client().Bearer(apptest.RootAccessToken)
	var me struct {
		ID          int64  `json:"id"`
		Role        int    `json:"role"`
		Status      int    `json:"status"`
		DisplayName string `json:"display_name"`
	}
	byToken.OK("GET", "/api/user/self", nil).Decode(t, &me)
	if me.ID != rootID || me.Role != user.RoleRoot || me.Status != user.StatusEnabled || me.DisplayName != "renamed" {
		t.Fatalf("root after the batch: %+v", me)
	}
	if u, _ := userOn(t, byToken, alice); u.Role != user.RoleUser {
		t.Fatalf("alice was promoted: role %d", u.Role)
	}
	if _, ok := userOn(t, byToken, 103*50+9); ok {
		t.Fatal("a peer's INSERT made a root")
	}
	if _, ok := userOn(t, byToken, 106*50+9); !ok {
		t.Fatal("the batch's ordinary user did not apply")
	}
	// The skipped events count as received: sent again, all are skipped.
	a = apptest.OKData[replicate.Answer](n1.PeerClient(9, apptest.NodeSecret(9)), "POST", "/api/cluster/sync",
		replicate.Batch{SourceNodeID: 9, Events: evs})
	if a != (replicate.Answer{Skipped: 7}) {
		t.Fatalf("the batch again: %+v", a)
	}
}

// hits is a fake node: it counts the calls it gets and answers every one
// with an empty success.
type hits struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	last  *http.Request
	body  []byte
}

func fakeNode(t *testing.T) *hits {
	h := &hits{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.last, h.body = r, body
		h.mu.Unlock()
		h.calls.Add(1)
		io.WriteString(w, `{"success":true,"data":{"applied":0,"skipped":0,"nodes":[]}}`)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// TestClusterPingCannotRedirect: a ping claiming node 2 with another
// address, signed with anything but node 2's secret, leaves node 2's
// record as it is, and node 2 still gets node 1's events.
func TestClusterPingCannotRedirect(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	n1, root1 := nodes[0], nodes[0].Root()
	fake := fakeNode(t)
	body := map[string]any{"node_id": 2, "node_name": "node-2", "address": fake.srv.URL, "secret_key": "attacker"}
	unsigned := n1.Client()
	unsigned.Header.Set(peer.SecretHeader, apptest.NodeSecret(1))
	for name, c := range map[string]*apptest.Client{
		"signed with node 1's secret": n1.PeerClient(2, apptest.NodeSecret(1)),
		"signed with a guess":         n1.PeerClient(2, "attacker"),
		"unsigned":                    unsigned,
	} {
		if r := c.Do("POST", "/api/cluster/ping", body); r.Success || r.Status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, r.Status, r.Raw)
		}
	}
	var two nodeInfo
	root1.OK("GET", apptest.Path("/api/cluster_node/%d", nodeRecordID(t, root1, 2)), nil).Decode(t, &two)
	if two.Address != nodes[1].URL() || *two.SecretKey != apptest.NodeSecret(2) {
		t.Fatalf("node 2's record after the forged pings: %+v", two)
	}
	_, carol := n1.NewUser("carol", user.RoleUser)
	apptest.Eventually(t, "node 1's user on node 2", func() bool {
		_, ok := userOn(t, nodes[1].Root(), carol)
		return ok
	})
	if n := fake.calls.Load(); n != 0 {
		t.Fatalf("the fake address got %d calls", n)
	}
}

// TestClusterUnknownPingerAwaitsSecret: a ping from a node in no table
// records it without the secret it sent, shown awaiting_secret; nothing
// is pushed to it or trusted from it until root sets its secret.
func TestClusterUnknownPingerAwaitsSecret(t *testing.T) {
	apptest.Parallel(t)
	n1 := apptest.NewCluster(t, 1)[0]
	root1 := n1.Root()
	fake := fakeNode(t)
	n1.PeerClient(7, "seven-secret").OK("POST", "/api/cluster/ping",
		map[string]any{"node_id": 7, "node_name": "node-7", "address": fake.srv.URL, "secret_key": "seven-secret"})
	var seven nodeInfo
	rec := nodeRecordID(t, root1, 7)
	root1.OK("GET", apptest.Path("/api/cluster_node/%d", rec), nil).Decode(t, &seven)
	if *seven.SecretKey != "" || seven.State != cluster.StateAwaitingSecret || seven.Address != fake.srv.URL {
		t.Fatalf("node 7 recorded as %+v", seven)
	}
	root1.Fail("GET", apptest.Path("/api/cluster_node/ping/%d", rec), nil, http.StatusOK, api.MsgNodeNoSecret)
	n1.NewUser("dave", user.RoleUser)
	sharedBy := func() int64 {
		var st struct {
			Nodes int64 `json:"nodes"`
		}
		root1.OK("GET", "/api/ratelimit/status", nil).Decode(t, &st)
		return st.Nodes
	}
	time.Sleep(2500 * time.Millisecond) // past a recount of the rate limits' nodes
	if n := fake.calls.Load(); n != 0 {
		t.Fatalf("node 7, awaiting its secret, got %d calls", n)
	}
	if n := sharedBy(); n != 1 {
		t.Fatalf("a record awaiting its secret shares the rate limits: %d nodes", n)
	}
	// Its sync is not heard either.
	n1.PeerClient(7, "seven-secret").Fail("POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: 7,
		Events: []replicate.Event{userEvent(7, 5, "INSERT", 5*50+7, newUserRow("ghost", user.RoleUser, 1))}},
		http.StatusUnauthorized, api.MsgClusterSecret)

	// Root sets its secret: node 1 pushes to it, signed as node 1.
	if n := apptest.OKData[nodeInfo](root1, "PUT", "/api/cluster_node/", map[string]any{"id": rec, "secret_key": "seven-secret"}); n.State != cluster.StateAlive {
		t.Fatalf("completed: %+v", n)
	}
	apptest.Eventually(t, "a push to node 7", func() bool { return fake.calls.Load() > 0 })
	apptest.Eventually(t, "node 7 shares the rate limits", func() bool { return sharedBy() == 2 })
	fake.mu.Lock()
	r, body := fake.last, fake.body
	fake.mu.Unlock()
	ts, _ := peer.ParseTimestamp(r.Header.Get(peer.TimestampHeader))
	if r.URL.Path != cluster.SyncPath || r.Header.Get(peer.SecretHeader) != "seven-secret" || r.Header.Get(peer.NodeHeader) != "1" ||
		!peer.Verify(apptest.NodeSecret(1), ts, r.URL.Path, body, r.Header.Get(peer.SignatureHeader)) {
		t.Fatalf("the push to node 7: %s %v", r.URL.Path, r.Header)
	}
}

// TestClusterSecretRotation: node 2 restarts with a new CLUSTER_SECRET and
// its old one as CLUSTER_PREVIOUS_SECRET. Node 1 still stores the old one:
// node 2's ping, refused signed with the new one, is sent again signed
// with the old one and teaches node 1 the new one; replication goes on
// both ways, and the old secret no longer signs for node 2.
func TestClusterSecretRotation(t *testing.T) {
	apptest.Parallel(t)
	env := []string{"CLUSTER_PING_INTERVAL", "100ms", "CLUSTER_PUSH_INTERVAL", "100ms"}
	const rotated = "rotated-secret-of-node-2"
	a := apptest.NewNode(t, 1, apptest.NodeSecret(1), env...)
	b := apptest.NewNode(t, 2, rotated, append(env, "CLUSTER_PREVIOUS_SECRET", apptest.NodeSecret(2))...)
	ra, rb := a.Root(), b.Root()
	b.AddTo(ra, 2) // node 1 stores node 2's old secret
	a.AddTo(rb, 1)
	apptest.Eventually(t, "node 1 learns node 2's new secret", func() bool {
		var n nodeInfo
		ra.OK("GET", apptest.Path("/api/cluster_node/%d", nodeRecordID(t, ra, 2)), nil).Decode(t, &n)
		return *n.SecretKey == rotated && n.State == cluster.StateAlive && n.LastHeartbeat > 0
	})
	_, u1 := a.NewUser("from1", user.RoleUser)
	_, u2 := b.NewUser("from2", user.RoleUser)
	apptest.Eventually(t, "both users on both nodes", func() bool {
		_, ok1 := userOn(t, rb, u1)
		_, ok2 := userOn(t, ra, u2)
		return ok1 && ok2
	})
	a.PeerClient(2, apptest.NodeSecret(2)).Fail("POST", "/api/cluster/ping",
		map[string]any{"node_id": 2, "node_name": "node-2", "address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(2)},
		http.StatusUnauthorized, api.MsgClusterSecret)
}

// snapshotAs asks node e for its snapshot as node id with token, signed
// with id's secret, and returns the status and body.
func snapshotAs(t *testing.T, e *apptest.Env, id int, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", e.URL()+"/api/cluster/snapshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(peer.SecretHeader, e.Config.Cluster.Secret)
	if token != "" {
		req.Header.Set(peer.JoinTokenHeader, token)
	}
	apptest.SignCluster(req, id, apptest.NodeSecret(id))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestClusterSnapshotNeedsJoinToken: the snapshot opens to a known node
// with a token root created for it, once; it carries no cluster secret.
func TestClusterSnapshotNeedsJoinToken(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	n1, root1 := nodes[0], nodes[0].Root()
	recordPeer(root1, 3)
	recordPeer(root1, 9)

	root1.Fail("POST", "/api/cluster_node/join_token", map[string]any{"node_id": 0}, http.StatusOK, cluster.MsgNodeIDRange)
	root1.Fail("POST", "/api/cluster_node/join_token", map[string]any{"node_id": 5}, http.StatusOK, api.MsgNodeNotFound)
	n1.PeerClient(6, "six").OK("POST", "/api/cluster/ping",
		map[string]any{"node_id": 6, "node_name": "node-6", "address": "http://127.0.0.1:9", "secret_key": "six"})
	root1.Fail("POST", "/api/cluster_node/join_token", map[string]any{"node_id": 6}, http.StatusOK, api.MsgJoinTokenNodeNoSecret)
	u, _ := n1.NewUser("joe", user.RoleUser)
	u.Fail("POST", "/api/cluster_node/join_token", map[string]any{"node_id": 3}, http.StatusOK, api.MsgNoPermission)

	token := n1.JoinToken(3)
	for name, tc := range map[string]struct {
		id    int
		token string
	}{
		"no token":          {3, ""},
		"a made-up token":   {3, "mgj_" + strings.Repeat("A", 52)},
		"node 3's, as 9":    {9, token},
		"node 3's, as 7":    {7, token},
		"node 3's, as node": {1, token},
	} {
		if status, body := snapshotAs(t, n1, tc.id, tc.token); status != http.StatusUnauthorized || !strings.Contains(body, api.MsgClusterSecret) {
			t.Errorf("%s: %d %.200s", name, status, body)
		}
	}
	// Used at once by several: exactly one gets the snapshot.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	wins := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := snapshotAs(t, n1, 3, token)
			mu.Lock()
			defer mu.Unlock()
			if status == http.StatusOK {
				wins++
				got = append(got, body)
			} else if status != http.StatusUnauthorized {
				t.Errorf("a concurrent use: %d %.200s", status, body)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("one token used 4 times at once: %d snapshots", wins)
	}
	if status, _ := snapshotAs(t, n1, 3, token); status != http.StatusUnauthorized {
		t.Fatalf("a used token again: %d", status)
	}
	snap := got[0]
	if !strings.Contains(snap, `"end":true`) || !strings.Contains(snap, "password_hash") {
		t.Fatalf("the snapshot is not whole: %.300s", snap)
	}
	for _, secret := range []string{apptest.NodeSecret(1), apptest.NodeSecret(2), apptest.NodeSecret(3), apptest.NodeSecret(9), "six", token} {
		if strings.Contains(snap, secret) {
			t.Errorf("the snapshot holds the secret %q", secret)
		}
	}
	for _, table := range []string{`"cluster_nodes"`, `"cluster_join_tokens"`} {
		if strings.Contains(snap, table) {
			t.Errorf("the snapshot holds %s", table)
		}
	}
	// A token expires after 15 minutes.
	expired := n1.JoinToken(3)
	if err := n1.App.Store.UseJoinToken(t.Context(), expired, 3, time.Now().Add(15*time.Minute+time.Second)); err == nil {
		t.Fatal("an expired token was used")
	}
	if err := n1.App.Store.UseJoinToken(t.Context(), expired, 3, time.Now()); err != nil {
		t.Fatalf("a fresh token: %v", err)
	}
	if err := n1.App.Store.UseJoinToken(t.Context(), expired, 3, time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a token used twice: %v", err)
	}
}
