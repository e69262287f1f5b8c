package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// A node killed with SIGKILL while it holds a grant of a balance another
// node owns strands it there until it starts again; its first grant call
// then settles it, once its charges from before the kill have arrived,
// and the balance ends exact (docs/decisions/cluster-grants.md).
func TestKilledGranteeSettlesItsGrants(t *testing.T) {
	apptest.Parallel(t)
	if testing.Short() {
		t.Skip("builds and kills a real process")
	}
	bin := buildGateway(t)
	n1 := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms")
	p2 := newNodeProcess(t, bin, 2)
	p2.start(t)
	n2 := apptest.Attach(t, p2.url)
	n2.AddTo(n1.Root(), 2)
	n1.AddTo(n2.Root(), 1)
	up := fakeupstream.New(t)
	const balance = 10_000_000
	g := n1.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, InputPrice: 1000, OutputPrice: 3000, Quota: balance})
	call := func() int {
		body := map[string]any{"model": "gpt-test", "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
		return n2.Call(g.Key, "POST", "/v1/chat/completions", body).Status
	}
	apptest.Eventually(t, "a call on node 2", func() bool { return call() == 200 })
	for range 3 {
		if s := call(); s != 200 {
			t.Fatalf("call on node 2: %d", s)
		}
	}
	ctx := context.Background()
	if held, _ := n1.App.Store.GrantedTo(ctx, g.UserID); held[2] == 0 {
		t.Fatalf("grants %v: want one for node 2", held)
	}
	p2.kill(t)
	p2.start(t)
	apptest.Eventually(t, "a call on node 2 after its restart", func() bool { return call() == 200 })
	apptest.Eventually(t, "the grants settled and given back", func() bool {
		held, err := n1.App.Store.GrantedTo(ctx, g.UserID)
		return err == nil && len(held) == 0
	})
	// Every charge that reached node 1 is in its logs, and its balance is
	// exact. Node 2 shows the same once its own holds are back: on SQLite
	// at once, on a server database when the killed process's billing
	// lease expires (about 35 s, docs/decisions/balance-slices.md).
	quota := func(c *apptest.Client) int64 {
		var u apptest.UserInfo
		c.OK("GET", apptest.Path("/api/user/%d", g.UserID), nil).Decode(t, &u)
		return u.Quota
	}
	apptest.Eventually(t, "an exact balance on node 1", func() bool {
		var logs []apptest.LogInfo
		r := g.Root.OK("GET", "/api/log/?type=2&page_size=100", nil)
		if err := json.Unmarshal(r.Data, &logs); err != nil {
			t.Fatal(err)
		}
		var billed int64
		for _, l := range logs {
			billed += l.Quota
		}
		return billed > 0 && quota(g.Root) == balance-billed
	})
	want, root2 := quota(g.Root), n2.Root()
	for deadline := time.Now().Add(time.Minute); quota(root2) != want; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node 2 shows %d, node 1 %d", quota(root2), want)
		}
	}
}
