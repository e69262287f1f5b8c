package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
)

// Money across a partitioned cluster (issue 24 §3): a node spends a
// balance another node owns only from the owner's grant
// (docs/decisions/cluster-grants.md).

// grantCallCost is what one grantCall costs: 12 prompt tokens at 1,000
// and 8 completion tokens at 3,000 CNY per million.
const grantCallCost = 12*1_000 + 8*3_000

// grantCall is a chat call whose hold is its exact cost (max_tokens 8, as
// the fake upstream answers).
func grantCall() map[string]any {
	b := chatBody("gpt-test")
	b["max_tokens"] = 8
	return b
}

// grantCluster starts three linked nodes and a user of node 1 with
// balance on every node, the test model priced as grantCallCost says
// (or at price when given); it returns the nodes' gateways and the links.
func grantCluster(t *testing.T, balance int64, price ...float64) ([]*apptest.Gateway, *apptest.Links) {
	t.Helper()
	up := fakeupstream.New(t)
	nodes, links := apptest.NewLinkedCluster(t, 3)
	if price == nil {
		price = []float64{1000, 3000}
	}
	g := nodes[0].NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, InputPrice: price[0], OutputPrice: price[1], Quota: balance})
	gs := make([]*apptest.Gateway, len(nodes))
	for i, n := range nodes {
		root := n.Root()
		apptest.Eventually(t, fmt.Sprintf("the user and key on node %d", i+1), func() bool {
			u, ok := userOn(t, root, g.UserID)
			// A model nobody offers: the key is known once this is not 401.
			return ok && u.Quota == balance && n.Call(g.Key, "POST", "/v1/chat/completions", chatBody("no-such-model")).Status != 401
		})
		gs[i] = &apptest.Gateway{Env: n, Root: root, UserID: g.UserID, Key: g.Key, ChannelID: g.ChannelID}
	}
	gs[0].User = g.User
	// The channel and its price, too.
	for i, n := range nodes {
		apptest.Eventually(t, fmt.Sprintf("the model on node %d", i+1), func() bool {
			return n.Call(g.Key, "POST", "/v1/chat/completions", chatBody("no-such-model")).Status != 401 &&
				modelServed(t, gs[i])
		})
	}
	return gs, links
}

// modelServed reports whether g's node prices the test model.
func modelServed(t *testing.T, g *apptest.Gateway) bool {
	r := g.Root.Do("GET", "/api/model_price/", nil)
	return r.Success && strings.Contains(string(r.Raw), "gpt-test")
}

// spendAll makes workers parallel calls on g's node until each is refused
// once; it returns the calls served and the refusals by status.
func spendAll(g *apptest.Gateway, workers int) (served int64, refused map[int]int) {
	var n atomic.Int64
	var mu sync.Mutex
	refused = map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall())
				if r.Status == 200 {
					n.Add(1)
					continue
				}
				mu.Lock()
				refused[r.Status]++
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	return n.Load(), refused
}

// settledEverywhere waits until every node shows the same balance and
// every node's logs hold every charge, and returns the balance and the sum
// of the charges.
func settledEverywhere(t *testing.T, gs []*apptest.Gateway) (quota, billed int64) {
	t.Helper()
	apptest.Eventually(t, "one balance and every charge on every node", func() bool {
		var quotas []int64
		var sums []int64
		for _, g := range gs {
			g.Env.SettleAll()
			u, _ := userOn(t, g.Root, g.UserID)
			var sum int64
			for _, l := range g.AllConsumeLogs() {
				sum += l.Quota
			}
			quotas, sums = append(quotas, u.Quota), append(sums, sum)
		}
		for i := range quotas {
			if quotas[i] != quotas[0] || sums[i] != sums[0] {
				return false
			}
		}
		quota, billed = quotas[0], sums[0]
		return true
	})
	return quota, billed
}

// grantsBack waits until the owner (node 1) holds no grant of the user.
func grantsBack(t *testing.T, gs []*apptest.Gateway) {
	t.Helper()
	apptest.Eventually(t, "every grant given back", func() bool {
		m, err := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID)
		if err != nil {
			t.Fatal(err)
		}
		return len(m) == 0
	})
}

func TestClusterPartitionNeverOverspends(t *testing.T) {
	apptest.Parallel(t)
	const balance = 900_000
	gs, links := grantCluster(t, balance)
	// Every node spends a little first, nodes 3 and 2 first: they hold
	// grants when the links go. (On a server database the owner's own
	// first call leases a slice of all that is free for 2 s, as its
	// estimate exceeds the balance, and a grant asked meanwhile is refused.)
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		for range 2 {
			if r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
				m, _ := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID)
				t.Fatalf("call before the partition on node %d: %d %s (grants %v)", i+1, r.Status, r.Body, m)
			}
		}
	}
	links.Partition([]int{1}, []int{2}, []int{3})
	atCut, err := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("at the cut: granted to other nodes %v", atCut)
	var wg sync.WaitGroup
	served := make([]int64, len(gs))
	refused := make([]map[int]int, len(gs))
	for i, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			served[i], refused[i] = spendAll(g, 6)
		}()
	}
	wg.Wait()
	for i := range gs {
		t.Logf("partition: node %d served %d calls (%d quota), refused %v", i+1, served[i], served[i]*grantCallCost, refused[i])
	}
	if refused[1][http.StatusServiceUnavailable] == 0 || refused[2][http.StatusServiceUnavailable] == 0 {
		t.Fatalf("cut-off nodes were not refused with 503: %v %v", refused[1], refused[2])
	}
	if refused[0][http.StatusTooManyRequests] == 0 {
		t.Fatalf("the owner was not refused for the balance: %v", refused[0])
	}
	links.Heal()
	quota, billed := settledEverywhere(t, gs)
	t.Logf("after the heal: balance %d, billed %d of %d", quota, billed, balance)
	if quota < 0 || billed > balance || quota != balance-billed {
		t.Fatalf("balance %d, billed %d: the partition spent more than %d", quota, billed, balance)
	}
	grantsBack(t, gs)
}

// TestClusterPartitionNeverOverspendsAKey: a limited key's own quota is
// spent through its owner's grants too: a 3-way partition spends at most
// the key's remain_quota, from a balance much larger.
func TestClusterPartitionNeverOverspendsAKey(t *testing.T) {
	apptest.Parallel(t)
	const limit = 1_200_000
	gs, links := grantCluster(t, 10_000_000)
	tok := gs[0].User.CreateToken(map[string]any{"name": "limited", "remain_quota": limit, "unlimited_quota": false})
	keyed := make([]*apptest.Gateway, len(gs))
	for i, g := range gs {
		keyed[i] = &apptest.Gateway{Env: g.Env, Root: g.Root, UserID: g.UserID, Key: tok.Key}
		apptest.Eventually(t, fmt.Sprintf("the limited key on node %d", i+1), func() bool {
			return g.Env.Call(tok.Key, "POST", "/v1/chat/completions", chatBody("no-such-model")).Status != 401
		})
	}
	for i := len(keyed) - 1; i >= 0; i-- {
		if r := keyed[i].Env.Call(tok.Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
			t.Fatalf("call before the partition on node %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	links.Partition([]int{1}, []int{2}, []int{3})
	var wg sync.WaitGroup
	for i, g := range keyed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			served, refused := spendAll(g, 6)
			t.Logf("partition: node %d served %d calls with the key, refused %v", i+1, served, refused)
		}()
	}
	wg.Wait()
	links.Heal()
	quota, billed := settledEverywhere(t, gs)
	ctx := context.Background()
	apptest.Eventually(t, "the key's quota the same everywhere", func() bool {
		var left []int64
		for _, g := range gs {
			k, err := g.Env.App.Store.UserToken(ctx, g.UserID, tok.ID)
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, k.RemainQuota)
		}
		return left[0] == left[1] && left[1] == left[2] && left[0] == limit-billed
	})
	t.Logf("after the heal: key spent %d of %d, balance %d", billed, limit, quota)
	if billed > limit || quota != 10_000_000-billed {
		t.Fatalf("billed %d with a key of %d, balance %d", billed, limit, quota)
	}
	apptest.Eventually(t, "every key grant given back", func() bool {
		m, err := gs[0].Env.App.Store.GrantedOfToken(ctx, tok.ID)
		return err == nil && len(m) == 0
	})
}

func TestClusterGrantServesAndGoesBack(t *testing.T) {
	apptest.Parallel(t)
	gs, _ := grantCluster(t, 10_000_000)
	for i := range 10 {
		g := gs[1+i%2]
		if r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
			t.Fatalf("call %d on node %d: %d %s", i, 2+i%2, r.Status, r.Body)
		}
	}
	m, err := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID)
	if err != nil {
		t.Fatal(err)
	}
	if m[2] == 0 || m[3] == 0 {
		t.Fatalf("grants on the owner right after the calls: %v, want some for nodes 2 and 3", m)
	}
	// Idle, the grants go back (2 s), and the balance is the same
	// everywhere.
	grantsBack(t, gs)
	quota, billed := settledEverywhere(t, gs)
	if billed != 10*grantCallCost || quota != 10_000_000-billed {
		t.Fatalf("balance %d, billed %d, want %d billed", quota, billed, 10*grantCallCost)
	}
}

func TestClusterOwnerDownServesSliceThenRefuses(t *testing.T) {
	apptest.Parallel(t)
	gs, _ := grantCluster(t, 10_000_000)
	g := gs[1]
	if r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
		t.Fatalf("call with the owner up: %d %s", r.Status, r.Body)
	}
	gs[0].Env.Pause()
	var served int
	for {
		r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall())
		if r.Status == 200 {
			served++
			continue
		}
		if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), relay.MsgOwnerUnavailable) ||
			r.Header.Get("Retry-After") == "" {
			t.Fatalf("refusal with the owner down: %d %s", r.Status, r.Body)
		}
		break
	}
	if served == 0 {
		t.Fatal("nothing served from the slice the node held")
	}
	t.Logf("owner down: %d calls served from the slice, then 503", served)
	gs[0].Env.Resume()
	apptest.Eventually(t, "calls served again with the owner back", func() bool {
		return g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()).Status == 200
	})
}

// TestClusterGrantLatency measures what a grant adds to a call on a node
// that does not own the balance: the same node serves a user it owns (no
// grant) and a user node 1 owns (grants), sequentially, at 2 and 8 CNY per
// million tokens from a balance of 100 CNY (figures in
// docs/decisions/cluster-grants.md). It is a measurement, run on demand
// (MODELGATE_MEASURE_GRANTS=1): in the suite, under -race on a loaded
// machine, an owner's answer can take longer than the grant call's
// timeout, and the 503 that follows is the designed answer, not a defect;
// what grants guarantee is tested above.
func TestClusterGrantLatency(t *testing.T) {
	apptest.Parallel(t)
	if os.Getenv("MODELGATE_MEASURE_GRANTS") == "" {
		t.Skip("a measurement: set MODELGATE_MEASURE_GRANTS=1 to run it")
	}
	gs, _ := grantCluster(t, 100_000_000, 2, 8)
	// A user node 2 owns, paying through the channel and price node 1 made.
	cl, id := gs[1].Env.NewUser("local", 1)
	gs[1].Root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 100_000_000})
	localKey := cl.CreateToken(map[string]any{"name": "local", "unlimited_quota": true}).Key
	const n = 300
	measure := func(key string) (p50, p90, p99 time.Duration) {
		var d []time.Duration
		for range n {
			start := time.Now()
			if r := gs[1].Env.Call(key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
				t.Fatalf("call: %d %s", r.Status, r.Body)
			}
			d = append(d, time.Since(start))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[n/2], d[n*9/10], d[n*99/100]
	}
	for round := range 2 {
		p50, p90, p99 := measure(localKey)
		t.Logf("round %d: call on node 2, user owned by node 2 (no grant): p50 %v p90 %v p99 %v", round+1, p50, p90, p99)
		p50, p90, p99 = measure(gs[1].Key)
		t.Logf("round %d: call on node 2, user owned by node 1 (grant): p50 %v p90 %v p99 %v", round+1, p50, p90, p99)
	}
}

// TestClusterReleaseGoneNodeGrants: root gives back what a node cut off
// for good still holds, once that node is disabled.
func TestClusterReleaseGoneNodeGrants(t *testing.T) {
	apptest.Parallel(t)
	gs, links := grantCluster(t, 10_000_000)
	if r := gs[1].Env.Call(gs[1].Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
		t.Fatalf("call on node 2: %d %s", r.Status, r.Body)
	}
	links.Cut(1, 2)
	held, err := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID)
	if err != nil || held[2] == 0 {
		t.Fatalf("grants %v, %v: want one for node 2", held, err)
	}
	rec := nodeRecordID(t, gs[0].Root, 2)
	path := apptest.Path("/api/cluster_node/%d/release_grants", rec)
	if r := gs[0].Root.Do("POST", path, nil); r.Success || !strings.Contains(r.Message, "请先停用该节点") {
		t.Fatalf("release of an enabled node: %s", r.Raw)
	}
	gs[0].Root.OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)
	var v struct {
		Users  int   `json:"users"`
		Amount int64 `json:"amount"`
	}
	gs[0].Root.OK("POST", path, nil).Decode(t, &v)
	if v.Users != 1 || v.Amount != held[2] {
		t.Fatalf("released %+v, want 1 user and %d", v, held[2])
	}
	grantsBack(t, gs)
}

// TestClusterRemovedOwnerSpendsLocally: a node that root removed from the
// cluster (disabled here) owns no balances for this node any more: its
// users are served against this node's view, as before grants.
func TestClusterRemovedOwnerSpendsLocally(t *testing.T) {
	apptest.Parallel(t)
	gs, links := grantCluster(t, 10_000_000)
	links.Cut(1, 2)
	g := gs[1]
	if r := g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("owner cut off, no grant: %d %s", r.Status, r.Body)
	}
	g.Root.OK("DELETE", apptest.Path("/api/cluster_node/%d", nodeRecordID(t, g.Root, 1)), nil)
	// Once the back-off after the failure is over (1 s).
	apptest.Eventually(t, "a call with the owner removed", func() bool {
		return g.Env.Call(g.Key, "POST", "/v1/chat/completions", grantCall()).Status == 200
	})
}

// TestClusterRestartedGranteeSettlesItsGrants: a node that stopped without
// giving its grant back (its owner out of reach) asks again after its
// restart; the owner first applies its earlier charges, then drops what
// was left of the earlier grant, exactly.
func TestClusterRestartedGranteeSettlesItsGrants(t *testing.T) {
	apptest.Parallel(t)
	gs, links := grantCluster(t, 10_000_000)
	for range 3 {
		if r := gs[1].Env.Call(gs[1].Key, "POST", "/v1/chat/completions", grantCall()); r.Status != 200 {
			t.Fatalf("call on node 2: %d %s", r.Status, r.Body)
		}
	}
	links.Cut(1, 2)
	n2 := gs[1].Env.Restart()
	links.Heal()
	if held, _ := gs[0].Env.App.Store.GrantedTo(context.Background(), gs[0].UserID); held[2] == 0 {
		t.Fatalf("grants %v before node 2 asks again: want node 2's earlier grant", held)
	}
	gs[1] = &apptest.Gateway{Env: n2, Root: n2.Root(), UserID: gs[1].UserID, Key: gs[1].Key, ChannelID: gs[1].ChannelID}
	apptest.Eventually(t, "a call on node 2 after its restart", func() bool {
		return n2.Call(gs[1].Key, "POST", "/v1/chat/completions", grantCall()).Status == 200
	})
	grantsBack(t, gs)
	quota, billed := settledEverywhere(t, gs)
	if billed != 4*grantCallCost || quota != 10_000_000-billed {
		t.Fatalf("balance %d, billed %d, want %d billed", quota, billed, 4*grantCallCost)
	}
}

// TestClusterGrantOnlyForTheSender: a node signing its call cannot ask a
// grant for, or give back the grant of, another node: the body's node_id
// must be the signing sender; the grants stay as they were.
func TestClusterGrantOnlyForTheSender(t *testing.T) {
	apptest.Parallel(t)
	gs, _ := grantCluster(t, 10_000_000)
	owner := gs[0].Env
	for _, amount := range []int64{1_000_000, -1_000_000} {
		owner.PeerClient(2, apptest.NodeSecret(2)).Fail("POST", "/api/cluster/grant", map[string]any{
			"user_id": gs[0].UserID, "node_id": 3, "key": fmt.Sprintf("forged-%d", amount), "amount": amount, "boot": "b"},
			http.StatusUnauthorized, api.MsgClusterSecret)
	}
	m, err := owner.App.Store.GrantedTo(context.Background(), gs[0].UserID)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 0 && (m[2] != 0 || m[3] != 0) {
		t.Fatalf("grants after forged calls: %v", m)
	}
}
