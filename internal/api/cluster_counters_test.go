package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// A balance change replicates as a delta of its counters only, so it must
// not change any other column on its node: a top-up used to set
// users.updated_at on the node that took it, and the rows differed across
// the cluster for good (found by cmd/clustersoak).
func TestClusterTopupLeavesRowsEqual(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	_, id := nodes[0].NewUser("bob", user.RoleUser)
	root2 := nodes[1].Root()
	apptest.Eventually(t, "bob on node 2", func() bool {
		_, ok := userOn(t, root2, id)
		return ok
	})
	// updated_at counts seconds: the top-up comes in a later second than
	// the creation, so a top-up that sets it shows.
	time.Sleep(1100 * time.Millisecond)
	nodes[0].Root().OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 500})
	apptest.Eventually(t, "the top-up on node 2", func() bool {
		u, _ := userOn(t, root2, id)
		return u.Quota == 500
	})
	ctx := context.Background()
	a, err := nodes[0].App.Store.UserByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nodes[1].App.Store.UserByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		// Not the rows themselves: they hold the password hash.
		t.Errorf("user rows differ after a top-up (updated_at node 1 %d, node 2 %d; quota %d, %d)",
			a.UpdatedAt, b.UpdatedAt, a.Quota, b.Quota)
	}
}

// An INSERT that arrives after a later UPDATE of its row (relayed through
// another node) loses on its columns but keeps its counters: the UPDATE
// created the row without them. The balance a user was created with used
// to be lost on such a node (found by cmd/clustersoak).
func TestClusterInsertOvertakenKeepsCounters(t *testing.T) {
	apptest.Parallel(t)
	nodes := make([]*apptest.Env, 3)
	roots := make([]*apptest.Client, 3)
	for i := range nodes {
		nodes[i] = apptest.NewNode(t, i+1, apptest.NodeSecret(i+1), "CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms")
		roots[i] = nodes[i].Root()
	}
	// Node 1 pushes to node 3 only, node 3 to node 2: the INSERT reaches
	// node 2 only once node 1 learns it, after node 3's UPDATE.
	nodes[2].AddTo(roots[0], 3)
	nodes[1].AddTo(roots[2], 2)
	// A node hears only the nodes of its table: each receiver knows its
	// senders, at an address nothing answers (it pushes nothing back).
	for _, p := range [][2]int{{2, 1}, {1, 3}, {1, 1}} {
		roots[p[0]].OK("POST", "/api/cluster_node/", map[string]any{"node_id": p[1], "node_name": fmt.Sprintf("node-%d", p[1]),
			"address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(p[1])})
	}
	created := apptest.OKData[struct {
		ID int64 `json:"id"`
	}](roots[0], "POST", "/api/user/", map[string]any{"username": "carol", "password": "carol-password", "quota": 700})
	id := created.ID
	apptest.Eventually(t, "carol on node 3", func() bool {
		_, ok := userOn(t, roots[2], id)
		return ok
	})
	roots[2].OK("PUT", "/api/user/", map[string]any{"id": id, "group": "vip"})
	apptest.Eventually(t, "node 3's update on node 2", func() bool {
		u, ok := userOn(t, roots[1], id)
		return ok && u.Group == "vip"
	})
	nodes[1].AddTo(roots[0], 2)
	apptest.Eventually(t, "the balance of the INSERT on node 2", func() bool {
		u, _ := userOn(t, roots[1], id)
		return u.Quota == 700
	})
	if u, _ := userOn(t, roots[1], id); u.Group != "vip" {
		t.Errorf("node 2: group %q, want the later update's vip", u.Group)
	}
}
