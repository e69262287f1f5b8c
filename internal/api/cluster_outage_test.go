package api_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// Three-node behaviour around peers that do not receive for a while
// (disabled, down) and rows written on two nodes at once.

// nodeRecordID is the record id of node nodeID in root's node table.
func nodeRecordID(t *testing.T, root *apptest.Client, nodeID int) int64 {
	t.Helper()
	for _, n := range apptest.OKData[[]nodeInfo](root, "GET", "/api/cluster_node/", nil) {
		if n.NodeID == nodeID {
			return n.ID
		}
	}
	t.Fatalf("node %d is not in the table", nodeID)
	return 0
}

// changeBurst makes a user on node 1 and changes it in order: renamed,
// topped up, a key created and deleted; it returns the user's id, the
// key's id and the balance the user ends with.
func changeBurst(t *testing.T, c trio, name string) (uid, keyID, quota int64) {
	t.Helper()
	_, uid = c.nodes[0].NewUser(name, user.RoleUser)
	c.roots[0].OK("PUT", "/api/user/", map[string]any{"id": uid, "username": name, "display_name": name + " final", "group": "vip"})
	for i := range 5 {
		c.roots[0].OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 1000 + i})
	}
	u, _ := userOn(t, c.roots[0], uid)
	cl := c.nodes[0].Client()
	cl.Login(name, "password-"+name)
	keyID = cl.CreateToken(map[string]any{"name": "gone"}).ID
	cl.OK("DELETE", apptest.Path("/api/token/%d", keyID), nil)
	return uid, keyID, u.Quota
}

// burstArrived reports whether node root has the end state of changeBurst.
func burstArrived(t *testing.T, root *apptest.Client, uid, quota int64, name string) bool {
	m, ok := row(t, root, apptest.Path("/api/user/%d", uid))
	return ok && m["display_name"] == name+" final" && m["group"] == "vip" && m["quota"] == float64(quota)
}

func TestClusterDisabledPeerCatchesUp(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	rec := nodeRecordID(t, c.roots[0], 3)
	c.roots[0].OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)

	uid, _, quota := changeBurst(t, c, "whiledisabled")
	apptest.Eventually(t, "the changes on node 2", func() bool { return burstArrived(t, c.roots[1], uid, quota, "whiledisabled") })
	// Node 2 has them; node 3 gets nothing while disabled on node 1 (node
	// 2 pushes its own events only).
	time.Sleep(time.Second)
	if _, ok := userOn(t, c.roots[2], uid); ok {
		t.Fatal("a peer disabled on node 1 received node 1's changes")
	}

	c.roots[0].OK("POST", apptest.Path("/api/cluster_node/%d/enable", rec), nil)
	apptest.Eventually(t, "the changes on node 3 after enable", func() bool { return burstArrived(t, c.roots[2], uid, quota, "whiledisabled") })
}

func TestClusterPausedPeerCatchesUp(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	c.nodes[2].Pause()
	uid, _, quota := changeBurst(t, c, "whiledown")
	// Node 2 writes too while node 3 is down.
	c.roots[1].OK("POST", "/api/model_price/", map[string]any{"model_name": "m-down", "input_price": 1, "output_price": 2})
	apptest.Eventually(t, "the changes on node 2", func() bool { return burstArrived(t, c.roots[1], uid, quota, "whiledown") })
	time.Sleep(500 * time.Millisecond) // a few failed pushes: the peers back off
	c.nodes[2].Resume()
	apptest.Eventually(t, "node 1's changes on node 3 after the outage", func() bool { return burstArrived(t, c.roots[2], uid, quota, "whiledown") })
	apptest.Eventually(t, "node 2's price on node 3", func() bool {
		var prices []map[string]any
		c.roots[2].OK("GET", "/api/model_price/", nil).Decode(t, &prices)
		for _, p := range prices {
			if p["model_name"] == "m-down" {
				return true
			}
		}
		return false
	})
}

// Many writes of one row on two nodes at once end with the same value on
// all three: last writer wins by (time, node), whatever the arrival order.
func TestClusterConflictingUpdatesConverge(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	_, uid := c.nodes[0].NewUser("contested", user.RoleUser)
	mp := idOf(t, c.roots[0].OK("POST", "/api/model_price/", map[string]any{"model_name": "m-contested", "input_price": 1, "output_price": 1}))
	c.onAll(t, "the user and the price", func(r *apptest.Client) bool {
		_, u := userOn(t, r, uid)
		_, p := listed(t, r, "/api/model_price/", mp)
		return u && p
	})
	var wg sync.WaitGroup
	for n := range 2 {
		for k := range 15 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.roots[n].OK("PUT", "/api/user/", map[string]any{"id": uid, "username": "contested", "display_name": fmt.Sprintf("n%d-%d", n+1, k)})
				c.roots[n].OK("PUT", "/api/model_price/", map[string]any{"id": mp, "input_price": float64(100*(n+1) + k)})
			}()
		}
	}
	wg.Wait()
	same := func(vals []any) bool {
		for _, v := range vals[1:] {
			if v != vals[0] {
				return false
			}
		}
		return true
	}
	var names, prices []any
	apptest.Eventually(t, "one value on every node", func() bool {
		names, prices = nil, nil
		for _, r := range c.roots {
			u, _ := row(t, r, apptest.Path("/api/user/%d", uid))
			p, _ := listed(t, r, "/api/model_price/", mp)
			names, prices = append(names, u["display_name"]), append(prices, p["input_price"])
		}
		return same(names) && same(prices)
	})
	// Converged, and stays so: nothing still in flight changes one node.
	time.Sleep(500 * time.Millisecond)
	for i, r := range c.roots {
		u, _ := row(t, r, apptest.Path("/api/user/%d", uid))
		p, _ := listed(t, r, "/api/model_price/", mp)
		if u["display_name"] != names[0] || p["input_price"] != prices[0] {
			t.Fatalf("node %d moved to %v, %v after converging on %v, %v", i+1, u["display_name"], p["input_price"], names[0], prices[0])
		}
	}
	if names[0] == "" || names[0] == nil || prices[0] == 1.0 {
		t.Fatalf("converged on the values before the writes: %v, %v", names[0], prices[0])
	}
}
