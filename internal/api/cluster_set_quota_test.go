package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// Absolute balance edits run on the row's owner node (docs/cluster.md,
// Credits: owner node). Issue 24 §3: two admins setting one user's quota
// with the same quota_before on two nodes at once both succeeded, each
// node turning its edit into a delta from its own view, and the balance
// moved twice everywhere.

func adminLogs(t *testing.T, e *apptest.Env, userID int64) int64 {
	t.Helper()
	n, err := e.App.Store.CountUserLogs(context.Background(), userID, store.LogAdmin)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func storedUser(t *testing.T, e *apptest.Env, id int64) store.User {
	t.Helper()
	u, err := e.App.Store.UserByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// storedToken reads key id of userID on node e; found is false while it
// has not replicated there.
func storedToken(e *apptest.Env, userID, id int64) (store.Token, bool) {
	tok, err := e.App.Store.UserToken(context.Background(), userID, id)
	return tok, err == nil
}

// settles waits until cond holds on every node, then checks it still holds
// a moment later: a second delta would arrive within a few pushes.
func settles(t *testing.T, nodes []*apptest.Env, what string, cond func(e *apptest.Env) bool) {
	t.Helper()
	for i, e := range nodes {
		apptest.Eventually(t, fmt.Sprintf("%s on node %d", what, i+1), func() bool { return cond(e) })
	}
	time.Sleep(500 * time.Millisecond)
	for i, e := range nodes {
		if !cond(e) {
			t.Fatalf("%s on node %d: no longer after a moment", what, i+1)
		}
	}
}

func TestClusterUserQuotaEditOnOwner(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	_, uid := nodes[0].NewUser("erin", user.RoleUser)
	if cluster.Owner(uid) != 1 {
		t.Fatalf("a user created on node 1 has id %d, owner %d", uid, cluster.Owner(uid))
	}
	waitEverywhere(t, roots, "erin", hasUser(t, uid))

	// Each round: two edits on each node, the owner included, all with the
	// balance read before the round: exactly one applies.
	const rounds, step = 10, 5_000_000
	for round := range rounds {
		before := int64(round * step)
		var mu sync.Mutex
		var wins []apptest.UserInfo
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				r := roots[i%3].Do("PUT", "/api/user/", map[string]any{"id": uid, "quota": before + step, "quota_before": before})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Success:
					var u apptest.UserInfo
					if err := json2(r, &u); err != nil {
						t.Errorf("round %d: %s", round, r.Raw)
					}
					wins = append(wins, u)
				case r.Message != api.MsgBalanceMoved:
					t.Errorf("round %d, node %d: %s", round, i%3+1, r.Raw)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d edits applied, want 1", round, len(wins))
		}
		// The answer shows the owner's balance, even on a node whose copy
		// has not heard of the edit yet.
		if wins[0].Quota != before+step {
			t.Fatalf("round %d: answered quota %d, want %d", round, wins[0].Quota, before+step)
		}
	}
	settles(t, nodes, "the balance and its admin logs", func(e *apptest.Env) bool {
		return storedUser(t, e, uid).Quota == rounds*step && adminLogs(t, e, uid) == rounds
	})
}

func TestClusterTokenRemainQuotaOnOwner(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	frank1, uid := nodes[0].NewUser("frank", user.RoleUser)
	waitEverywhere(t, roots, "frank", hasUser(t, uid))
	tok := frank1.CreateToken(map[string]any{"name": "raced", "remain_quota": 1000})
	if cluster.Owner(tok.ID) != 1 {
		t.Fatalf("a key created on node 1 has id %d", tok.ID)
	}
	settles(t, nodes, "the key", func(e *apptest.Env) bool { _, ok := storedToken(e, uid, tok.ID); return ok })
	franks := []*apptest.Client{frank1, loginOn(nodes[1], "frank"), loginOn(nodes[2], "frank")}

	// The same value set on nodes 2 and 3 at once, round after round: an
	// absolute set applies as one (main moved the key twice the difference).
	for round := 1; round <= 5; round++ {
		want := int64(1000 + round*1_000_000)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				r := franks[1+i%2].Do("PUT", "/api/token/", map[string]any{"id": tok.ID, "remain_quota": want})
				var got apptest.TokenInfo
				if !r.Success || json2(r, &got) != nil || got.RemainQuota != want {
					t.Errorf("round %d, node %d: %s", round, 2+i%2, r.Raw)
				}
			})
		}
		wg.Wait()
		settles(t, nodes, fmt.Sprintf("round %d's remain_quota", round), func(e *apptest.Env) bool {
			got, _ := storedToken(e, uid, tok.ID)
			return got.RemainQuota == want
		})
	}
	// Two values at once: every node ends with the one the owner applied
	// last.
	var wg sync.WaitGroup
	for i, v := range []int64{7_000_000, 9_000_000} {
		wg.Go(func() { franks[1+i].OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "remain_quota": v}) })
	}
	wg.Wait()
	final := func() int64 { got, _ := storedToken(nodes[0], uid, tok.ID); return got.RemainQuota }
	if v := final(); v != 7_000_000 && v != 9_000_000 {
		t.Fatalf("owner's remain_quota %d", v)
	}
	settles(t, nodes, "the owner's remain_quota", func(e *apptest.Env) bool {
		got, _ := storedToken(e, uid, tok.ID)
		return got.RemainQuota == final()
	})
}

func TestClusterQuotaEditOwnerDown(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	gina1, uid := nodes[0].NewUser("gina", user.RoleUser)
	tok := gina1.CreateToken(map[string]any{"name": "before", "remain_quota": 1000})
	waitEverywhere(t, roots, "gina", hasUser(t, uid))
	settles(t, nodes, "the key", func(e *apptest.Env) bool { _, ok := storedToken(e, uid, tok.ID); return ok })
	gina2 := loginOn(nodes[1], "gina")

	nodes[0].Pause()
	userDown := fmt.Sprintf("用户所属的集群节点 %d 暂时无法修改额度,请稍后重试", 1)
	tokenDown := fmt.Sprintf("令牌所属的集群节点 %d 暂时无法修改额度,请稍后重试", 1)
	edit := map[string]any{"id": uid, "quota": 5_000_000, "quota_before": 0, "display_name": "gina-renamed"}
	roots[1].Fail("PUT", "/api/user/", edit, http.StatusOK, userDown)
	gina2.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "remain_quota": 2000, "name": "after"}, http.StatusOK, tokenDown)
	// Nothing changed, the other fields neither.
	time.Sleep(300 * time.Millisecond)
	for i, e := range nodes {
		if u := storedUser(t, e, uid); u.Quota != 0 || u.DisplayName != "gina" || adminLogs(t, e, uid) != 0 {
			t.Fatalf("node %d: user %+v while the owner is down", i+1, u)
		}
		if got, _ := storedToken(e, uid, tok.ID); got.RemainQuota != 1000 || got.Name != "before" {
			t.Fatalf("node %d: key %+v while the owner is down", i+1, got)
		}
	}
	// A key sent back with its remain_quota unchanged does not need the
	// owner: only the name changes.
	gina2.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "remain_quota": 1000, "name": "renamed"})

	// Back: the edit applies once; the same edit again (an answer lost
	// after the owner applied) finds the balance moved.
	nodes[0].Resume()
	var got apptest.UserInfo
	roots[1].OK("PUT", "/api/user/", edit).Decode(t, &got)
	if got.Quota != 5_000_000 {
		t.Fatalf("answered quota %d, want the owner's 5000000", got.Quota)
	}
	roots[2].Fail("PUT", "/api/user/", edit, http.StatusOK, api.MsgBalanceMoved)
	gina2.OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "remain_quota": 2000, "name": "after"})
	// On the owner itself the edit runs as before. (It writes the whole
	// row, so it waits for the rename: last writer wins.)
	apptest.Eventually(t, "the rename on node 1", func() bool { return storedUser(t, nodes[0], uid).DisplayName == "gina-renamed" })
	roots[0].OK("PUT", "/api/user/", map[string]any{"id": uid, "quota": 6_000_000, "quota_before": 5_000_000})
	settles(t, nodes, "the edits", func(e *apptest.Env) bool {
		u := storedUser(t, e, uid)
		k, _ := storedToken(e, uid, tok.ID)
		return u.Quota == 6_000_000 && u.DisplayName == "gina-renamed" && adminLogs(t, e, uid) == 2 &&
			k.RemainQuota == 2000 && k.Name == "after"
	})
}

// TestClusterSetQuotaRefused: the owner's endpoint takes only its own
// rows, from a caller with its secret.
func TestClusterSetQuotaRefused(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	_, uid := nodes[1].NewUser("hank", user.RoleUser)
	if cluster.Owner(uid) != 2 {
		t.Fatalf("a user created on node 2 has id %d", uid)
	}
	waitEverywhere(t, rootsOf(nodes), "hank", hasUser(t, uid))
	// Node 2, signing as itself, asks node 1 to edit node 2's own row.
	c := nodes[0].PeerClient(2, apptest.NodeSecret(2))
	c.Fail("POST", "/api/cluster/set_quota", map[string]any{"table": "users", "id": uid, "quota": 1_000_000, "quota_before": 0},
		http.StatusOK, api.MsgBalanceNotOwner)
	c.Fail("POST", "/api/cluster/set_quota", map[string]any{"table": "users", "id": 51, "quota": 1_000_000},
		http.StatusOK, api.MsgOwnerRequest)
	c.Fail("POST", "/api/cluster/set_quota", map[string]any{"table": "channels", "id": 51, "quota": 1}, http.StatusOK, api.MsgOwnerRequest)
	// A row the owner does not have.
	var ans struct{ Outcome string }
	c.OK("POST", "/api/cluster/set_quota", map[string]any{"table": "users", "id": 1_000_001, "quota": 1, "quota_before": 0}).Decode(t, &ans)
	if ans.Outcome != "not_found" {
		t.Fatalf("outcome %q for a missing row", ans.Outcome)
	}
	// Node 1's secret with a forged signature, and a wrong secret: refused.
	nodes[1].PeerClient(1, "forged").Fail("POST", "/api/cluster/set_quota",
		map[string]any{"table": "users", "id": uid, "quota": 1_000_000, "quota_before": 0}, http.StatusUnauthorized, api.MsgClusterSecret)
	c.Header.Set("X-Cluster-Secret", apptest.NodeSecret(2))
	c.Fail("POST", "/api/cluster/set_quota", map[string]any{"table": "users", "id": uid, "quota": 1_000_000, "quota_before": 0},
		http.StatusUnauthorized, api.MsgClusterSecret)
	time.Sleep(300 * time.Millisecond)
	for i, e := range nodes {
		if u := storedUser(t, e, uid); u.Quota != 0 {
			t.Fatalf("node %d: balance %d after refused calls", i+1, u.Quota)
		}
	}
}
