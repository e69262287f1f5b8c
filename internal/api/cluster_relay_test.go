package api_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// Three-node behaviour of what the relay reads and writes: caches follow
// the peers' changes, charges and top-ups add up on every node.

// cacheDeadline is how soon a peer's change must take effect: well before
// the 10 s reload that would hide a missing invalidation.
const cacheDeadline = 3 * time.Second

func chatBody(model string) map[string]any {
	return map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
}

// relayGateway sets a relay path up on node 1 and waits until every node
// serves it; it returns the gateway on each node (Root, User and Env of
// that node).
func (c trio) relayGateway(t *testing.T, up *fakeupstream.Server) []*apptest.Gateway {
	t.Helper()
	g := c.nodes[0].NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	users := c.loginEverywhere(t, "caller")
	out := make([]*apptest.Gateway, len(c.nodes))
	c.onAll(t, "the funded user", func(r *apptest.Client) bool { u, _ := userOn(t, r, g.UserID); return u.Quota == 10_000_000 })
	for i, n := range c.nodes {
		out[i] = &apptest.Gateway{Env: n, Root: c.roots[i], User: users[i], UserID: g.UserID, Key: g.Key, ChannelID: g.ChannelID}
		apptest.Eventually(t, fmt.Sprintf("the relay path on node %d", i+1), func() bool {
			return n.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test")).Status == 200
		})
	}
	return out
}

func TestClusterCachesFollowPeers(t *testing.T) {
	apptest.Parallel(t)
	up := fakeupstream.New(t)
	c := newTrio(t)
	gs := c.relayGateway(t, up)
	n2 := c.nodes[1]

	// A model offered on node 1 is served on node 2 with the event.
	if r := n2.Call(gs[1].Key, "POST", "/v1/chat/completions", chatBody("gpt-added")); r.Status == 200 {
		t.Fatalf("gpt-added served before it was offered: %s", r.Body)
	}
	gs[0].AddModel("gpt-added", up.URL, 1, 2)
	within(t, cacheDeadline, "node 2 serves the model node 1 added", func() bool {
		return n2.Call(gs[1].Key, "POST", "/v1/chat/completions", chatBody("gpt-added")).Status == 200
	})

	// A key disabled on node 1 is refused on node 2, which had it cached.
	if r := n2.Call(gs[1].Key, "POST", "/v1/chat/completions", chatBody("gpt-test")); r.Status != 200 {
		t.Fatalf("call before the disable: %d %s", r.Status, r.Body)
	}
	gs[0].User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": gs[0].TokenID(), "status": 2})
	within(t, cacheDeadline, "node 2 refuses the key node 1 disabled", func() bool {
		return n2.Call(gs[1].Key, "POST", "/v1/chat/completions", chatBody("gpt-test")).Status == 401
	})

	// An option changed on node 1 takes effect on node 2.
	var st struct {
		SystemName string `json:"system_name"`
	}
	gs[0].SetOption("SystemName", "Changed On One")
	within(t, cacheDeadline, "node 2 shows the option node 1 set", func() bool {
		n2.Client().OK("GET", "/api/status", nil).Decode(t, &st)
		return st.SystemName == "Changed On One"
	})
}

func TestClusterRelayChargeReachesPeers(t *testing.T) {
	apptest.Parallel(t)
	up := fakeupstream.New(t)
	c := newTrio(t)
	gs := c.relayGateway(t, up)
	// A key with a limit, charged on node 2 while its owner raises the
	// limit on node 3: the raise is a delta, the charges too, both count.
	limited := gs[0].User.CreateToken(map[string]any{"name": "limited", "remain_quota": 1_000_000, "unlimited_quota": false})
	limPath := apptest.Path("/api/token/%d", limited.ID)
	for i, g := range gs {
		apptest.Eventually(t, fmt.Sprintf("the limited key on node %d", i+1), func() bool {
			m, ok := row(t, g.User, limPath)
			return ok && m["remain_quota"] == 1_000_000.0
		})
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{gs[0].Key, limited.Key}[i%2]
			if r := gs[i%2].Env.Call(key, "POST", "/v1/chat/completions", chatBody("gpt-test")); r.Status != 200 {
				t.Errorf("call %d: %d %s", i, r.Status, r.Body)
			}
		}()
	}
	gs[2].User.OK("PUT", "/api/token/", map[string]any{"id": limited.ID, "remain_quota": 1_500_000})
	wg.Wait()

	// Every node's logs, read where they were written (an id's residue is
	// its node).
	var charged, chargedLimited int64
	logsOf := func(g *apptest.Gateway) map[int64]apptest.LogInfo {
		m := map[int64]apptest.LogInfo{}
		for _, l := range g.AllConsumeLogs() {
			m[l.ID] = l
		}
		return m
	}
	all := map[int64]apptest.LogInfo{}
	for i, g := range gs {
		for id, l := range logsOf(g) {
			if id%50 == int64(i+1) {
				all[id] = l
			}
		}
	}
	if len(all) != 3+6 { // one call per node in relayGateway, 6 here
		t.Fatalf("%d consume logs, want 9", len(all))
	}
	for _, l := range all {
		charged += l.Quota
		if l.TokenName == "limited" {
			chargedLimited += l.Quota
		}
	}
	if chargedLimited == 0 {
		t.Fatal("the limited key was not charged")
	}
	for i, g := range gs {
		apptest.Eventually(t, fmt.Sprintf("balances and logs on node %d", i+1), func() bool {
			var tok apptest.TokenInfo
			g.User.OK("GET", limPath, nil).Decode(t, &tok)
			u, _ := userOn(t, g.Root, g.UserID)
			logs := logsOf(g)
			if u.Quota != 10_000_000-charged || tok.RemainQuota != 1_500_000-chargedLimited || tok.UsedQuota != chargedLimited || len(logs) != len(all) {
				return false
			}
			for id, l := range all {
				if logs[id] != l {
					t.Fatalf("log %d on node %d: %+v, want %+v", id, i+1, logs[id], l)
				}
			}
			return true
		})
		a := g.Accounts()
		if a.UserUsed != charged || a.ChannelUsed != charged {
			t.Fatalf("node %d: used %d, channel used %d, want %d", i+1, a.UserUsed, a.ChannelUsed, charged)
		}
	}
}

func TestClusterConcurrentTopupsSum(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	_, id := c.nodes[0].NewUser("richie", 1)
	c.onAll(t, "the user", func(r *apptest.Client) bool { _, ok := userOn(t, r, id); return ok })
	// 40 top-ups per node from 8 clients each: all three nodes write at
	// once, while the nodes' connection pools stay well within a shared
	// PostgreSQL's client limit (other suites run beside this one in CI).
	const perNode, clients = 40, 8
	var wg sync.WaitGroup
	var want int64
	for n := range 3 {
		for w := range clients {
			var amounts []int64
			for k := w; k < perNode; k += clients {
				amount := int64(1000*(n+1) + k)
				want += amount
				amounts = append(amounts, amount)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, amount := range amounts {
					if r := c.roots[n].Do("POST", "/api/topup", map[string]any{"user_id": id, "quota": amount}); !r.Success {
						t.Errorf("top-up on node %d: %s", n+1, r.Raw)
					}
				}
			}()
		}
	}
	wg.Wait()
	c.onAll(t, "every top-up", func(r *apptest.Client) bool { u, _ := userOn(t, r, id); return u.Quota == want })
	// Nothing more arrives later: the sum stays.
	time.Sleep(300 * time.Millisecond)
	for i, r := range c.roots {
		if u, _ := userOn(t, r, id); u.Quota != want {
			t.Fatalf("node %d: quota %d, want %d", i+1, u.Quota, want)
		}
	}
}
