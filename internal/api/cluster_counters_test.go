package api_test

import (
	"context"
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
