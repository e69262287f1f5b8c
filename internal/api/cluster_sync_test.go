package api_test

import (
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// userOn reads user id on node e through its root; found is false when
// the node does not have it.
func userOn(t *testing.T, root *apptest.Client, id int64) (apptest.UserInfo, bool) {
	r := root.Do("GET", apptest.Path("/api/user/%d", id), nil)
	var u apptest.UserInfo
	if r.Success {
		r.Decode(t, &u)
	}
	return u, r.Success
}

func TestClusterReplicatesUsers(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := make([]*apptest.Client, len(nodes))
	for i, n := range nodes {
		roots[i] = n.Root()
	}
	_, id := nodes[0].NewUser("alice", user.RoleUser)
	for i := range nodes {
		apptest.Eventually(t, "alice on every node", func() bool {
			u, ok := userOn(t, roots[i], id)
			return ok && u.Username == "alice"
		})
	}
	// An update on node 2 reaches 1 and 3.
	roots[1].OK("PUT", "/api/user/", map[string]any{"id": id, "username": "alice", "display_name": "Alice Two", "group": "vip"})
	for i := range nodes {
		apptest.Eventually(t, "the update on every node", func() bool {
			u, ok := userOn(t, roots[i], id)
			return ok && u.Group == "vip"
		})
	}
	// Concurrent top-ups on two nodes sum on all three.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		for k := 0; k < 10; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				roots[i].OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 1000 * (i + 1)})
			}()
		}
	}
	wg.Wait()
	for i := range nodes {
		apptest.Eventually(t, "top-ups summed on every node", func() bool {
			u, _ := userOn(t, roots[i], id)
			return u.Quota == 30000
		})
	}
	// A delete on node 3 removes it everywhere.
	roots[2].OK("DELETE", apptest.Path("/api/user/%d", id), nil)
	for i := range nodes {
		apptest.Eventually(t, "the delete on every node", func() bool {
			u, ok := userOn(t, roots[i], id)
			return !ok || u.Status == user.StatusDeleted
		})
	}
}
