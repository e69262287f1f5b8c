package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/user"
)

// Credits of codes and orders run on their owner node only (docs/
// cluster.md, Credits: owner node): each test would credit more than once
// if a node credited its own copy of a row another node created.

func rootsOf(nodes []*apptest.Env) []*apptest.Client {
	roots := make([]*apptest.Client, len(nodes))
	for i, n := range nodes {
		roots[i] = n.Root()
	}
	return roots
}

// loginOn logs a user NewUser created into node e (its row must have
// replicated there).
func loginOn(e *apptest.Env, username string) *apptest.Client {
	c := e.Client()
	c.Login(username, "password-"+username)
	return c
}

// codeOn reads the code with key on the node of root; found is false when
// it has not replicated there yet.
func codeOn(root *apptest.Client, key string) (redemptionInfo, bool) {
	var rows []redemptionInfo
	r := root.Do("GET", "/api/redemption/search?keyword="+key, nil)
	if !r.Success || json2(r, &rows) != nil || len(rows) != 1 {
		return redemptionInfo{}, false
	}
	return rows[0], true
}

// json2 decodes a response's data without failing the test.
func json2(r *apptest.Response, v any) error { return json.Unmarshal(r.Data, v) }

// waitEverywhere waits until cond holds on every node's root.
func waitEverywhere(t *testing.T, roots []*apptest.Client, what string, cond func(root *apptest.Client) bool) {
	t.Helper()
	for i, root := range roots {
		apptest.Eventually(t, fmt.Sprintf("%s on node %d", what, i+1), func() bool { return cond(root) })
	}
}

func hasUser(t *testing.T, id int64) func(*apptest.Client) bool {
	return func(root *apptest.Client) bool { _, ok := userOn(t, root, id); return ok }
}

func hasCode(key string) func(*apptest.Client) bool {
	return func(root *apptest.Client) bool { _, ok := codeOn(root, key); return ok }
}

func hasOrder(id int64) func(*apptest.Client) bool {
	return func(root *apptest.Client) bool { return root.Do("GET", apptest.Path("/api/order/%d", id), nil).Success }
}

// quotaIs waits until user id's balance is want on every node, then checks
// it stays there (a second credit would arrive within a few pushes) and
// that every node holds exactly logs top-up logs of the user.
func quotaIs(t *testing.T, nodes []*apptest.Env, roots []*apptest.Client, id, want int64, logs int64) {
	t.Helper()
	waitEverywhere(t, roots, "the balance", func(root *apptest.Client) bool {
		u, _ := userOn(t, root, id)
		return u.Quota == want
	})
	for i, e := range nodes {
		apptest.Eventually(t, fmt.Sprintf("the top-up logs on node %d", i+1), func() bool { return topupLogs(t, e, id) == logs })
	}
	time.Sleep(500 * time.Millisecond)
	for i, root := range roots {
		if u, _ := userOn(t, root, id); u.Quota != want {
			t.Fatalf("node %d: balance %d, want %d", i+1, u.Quota, want)
		}
		if n := topupLogs(t, nodes[i], id); n != logs {
			t.Fatalf("node %d: %d top-up logs, want %d", i+1, n, logs)
		}
	}
}

func TestClusterRedeemForwardedToOwner(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	keys := createCodes(t, roots[0], "owned by node 1", 5000, 2)
	code := codeByKey(t, roots[0], keys[0])
	if cluster.Owner(code.ID) != 1 {
		t.Fatalf("a code created on node 1 has id %d, owner %d", code.ID, cluster.Owner(code.ID))
	}
	alice2, uid := nodes[1].NewUser("alice", user.RoleUser)
	waitEverywhere(t, roots, "alice", hasUser(t, uid))
	waitEverywhere(t, roots, "the codes", hasCode(keys[1]))

	var got int64
	alice2.OK("POST", "/api/user/topup", map[string]string{"key": keys[0]}).Decode(t, &got)
	if got != 5000 {
		t.Fatalf("redeemed %d, want 5000", got)
	}
	quotaIs(t, nodes, roots, uid, 5000, 1)
	waitEverywhere(t, roots, "the code used", func(root *apptest.Client) bool {
		c, _ := codeOn(root, keys[0])
		return c.Status == redemption.StatusUsed && c.UsedUserID == uid
	})
	// Again, on every node: the owner says used.
	for _, n := range nodes {
		loginOn(n, "alice").Fail("POST", "/api/user/topup", map[string]string{"key": keys[0]}, http.StatusOK, api.MsgRedeemKeyUsed)
	}

	// An Idempotency-Key is kept on the owner: a retry on another node
	// replays the first answer.
	alice3 := loginOn(nodes[2], "alice")
	for i, c := range []*apptest.Client{alice2, alice2, alice3} {
		c.Header.Set("Idempotency-Key", "redeem-second")
		r := c.OK("POST", "/api/user/topup", map[string]string{"key": keys[1]})
		r.Decode(t, &got)
		if got != 5000 || (i > 0) != (r.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("attempt %d: %s, replayed %q", i, r.Raw, r.Header.Get("Idempotent-Replayed"))
		}
	}
	quotaIs(t, nodes, roots, uid, 10000, 2)
}

func TestClusterRedeemConcurrentExactlyOnce(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	keys := createCodes(t, roots[0], "raced", 7000, 1)
	ids := make([]int64, 3)
	for i := range ids {
		_, ids[i] = nodes[0].NewUser(fmt.Sprintf("racer%d", i), user.RoleUser)
	}
	for _, id := range ids {
		waitEverywhere(t, roots, "the racers", hasUser(t, id))
	}
	waitEverywhere(t, roots, "the code", hasCode(keys[0]))
	// Racer i redeems on node i+1, 10 requests each, all at once.
	clients := make([]*apptest.Client, 3)
	for i := range clients {
		clients[i] = loginOn(nodes[i], fmt.Sprintf("racer%d", i))
	}
	var mu sync.Mutex
	wins := map[int]int{}
	var wg sync.WaitGroup
	for i := range 3 {
		for range 10 {
			wg.Go(func() {
				r := clients[i].Do("POST", "/api/user/topup", map[string]string{"key": keys[0]})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Success:
					wins[i]++
				case r.Message != api.MsgRedeemKeyUsed:
					t.Errorf("node %d: %s", i+1, r.Raw)
				}
			})
		}
	}
	wg.Wait()
	winner, total := -1, 0
	for i, n := range wins {
		winner, total = i, total+n
	}
	if total != 1 {
		t.Fatalf("%d successful redemptions cluster-wide (%v), want 1", total, wins)
	}
	for i, id := range ids {
		want, logs := int64(0), int64(0)
		if i == winner {
			want, logs = 7000, 1
		}
		quotaIs(t, nodes, roots, id, want, logs)
	}
}

func TestClusterOrderActivatedOnOwner(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	for _, root := range roots {
		enableBank(root)
		topupOn(root)
	}
	bob, uid := nodes[0].NewUser("bob", user.RoleUser)
	a := topup(t, bob, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	if cluster.Owner(a.Order.ID) != 1 {
		t.Fatalf("order %d created on node 1", a.Order.ID)
	}
	waitEverywhere(t, roots, "the top-up order", hasOrder(a.Order.ID))
	// Test pay on node 2 and admin marking on node 3, many at once.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			var r *apptest.Response
			if i%2 == 0 {
				r = roots[1].Do("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
			} else {
				r = roots[2].Do("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1, "pay_method": "bank"})
			}
			var o orderInfo
			if !r.Success || json2(r, &o) != nil || o.Status != 1 || o.ID != a.Order.ID {
				t.Errorf("activation %d: %s", i, r.Raw)
			}
		})
	}
	wg.Wait()
	quotaIs(t, nodes, roots, uid, 12_000_000, 1)
	waitEverywhere(t, roots, "the order paid", func(root *apptest.Client) bool { return getOrder(t, root, a.Order.ID).Status == 1 })

	// A plan order: one subscription on every node.
	p := createPlan(t, roots[0], planBody("owned-plan", "price", 5))
	o := planOrder(t, bob, map[string]any{"plan_id": p.ID, "mode": "stack"})
	waitEverywhere(t, roots, "the plan order", hasOrder(o.ID))
	for i := range 10 {
		wg.Go(func() {
			// A test pay after the marking reads "not pending": its method
			// (bank) is not the one that paid (offline).
			var r *apptest.Response
			if i%2 == 0 {
				r = roots[2].Do("PUT", apptest.Path("/api/order/%d", o.ID), map[string]any{"status": 1, "pay_method": "offline"})
			} else {
				r = roots[1].Do("POST", apptest.Path("/api/order/%d/test_pay", o.ID), nil)
			}
			if !r.Success && r.Message != api.MsgOrderNotPending {
				t.Errorf("activation %d: %s", i, r.Raw)
			}
		})
	}
	wg.Wait()
	for i, n := range nodes {
		apptest.Eventually(t, fmt.Sprintf("the subscription on node %d", i+1), func() bool {
			subs, err := n.App.Store.ActiveUserPlans(context.Background(), uid, time.Now().Unix())
			return err == nil && len(subs) == 1 && subs[0].OrderID == o.ID
		})
	}
	time.Sleep(500 * time.Millisecond)
	for i, n := range nodes {
		subs, err := n.App.Store.ActiveUserPlans(context.Background(), uid, time.Now().Unix())
		if err != nil || len(subs) != 1 {
			t.Fatalf("node %d: %d subscriptions, %v", i+1, len(subs), err)
		}
	}
}

func TestClusterOwnerDown(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	enableBank(roots[0])
	topupOn(roots[0])
	keys := createCodes(t, roots[0], "owner down", 3000, 1)
	carol1, uid := nodes[0].NewUser("carol", user.RoleUser)
	a := topup(t, carol1, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	waitEverywhere(t, roots, "the code", hasCode(keys[0]))
	waitEverywhere(t, roots, "the order", hasOrder(a.Order.ID))
	waitEverywhere(t, roots, "carol", hasUser(t, uid))
	carol2 := loginOn(nodes[1], "carol")

	nodes[0].Pause()
	redeemDown := fmt.Sprintf("兑换码所属的集群节点 %d 暂时无法处理兑换,请稍后重试", 1)
	orderDown := fmt.Sprintf("订单所属的集群节点 %d 暂时无法处理该操作,请稍后重试", 1)
	carol2.Fail("POST", "/api/user/topup", map[string]string{"key": keys[0]}, http.StatusOK, redeemDown)
	roots[1].Fail("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil, http.StatusOK, orderDown)
	roots[2].Fail("PUT", apptest.Path("/api/order/%d", a.Order.ID), map[string]any{"status": 1}, http.StatusOK, orderDown)
	// Nothing changed on the nodes that answered.
	for i, root := range roots[1:] {
		if u, _ := userOn(t, root, uid); u.Quota != 0 {
			t.Fatalf("node %d: balance %d while the owner is down", i+2, u.Quota)
		}
		if c, _ := codeOn(root, keys[0]); c.Status != redemption.StatusUnused {
			t.Fatalf("node %d: code status %d while the owner is down", i+2, c.Status)
		}
		if o := getOrder(t, root, a.Order.ID); o.Status != 0 {
			t.Fatalf("node %d: order status %d while the owner is down", i+2, o.Status)
		}
	}
	// A disabled owner is refused the same way, without a call.
	nodes[0].Resume()
	rec := nodeRecord(t, roots[1], 1)
	roots[1].OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)
	carol2.Fail("POST", "/api/user/topup", map[string]string{"key": keys[0]}, http.StatusOK, redeemDown)
	roots[1].OK("POST", apptest.Path("/api/cluster_node/%d/enable", rec), nil)

	// Back: the retry credits once.
	carol2.OK("POST", "/api/user/topup", map[string]string{"key": keys[0]})
	roots[1].OK("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
	quotaIs(t, nodes, roots, uid, 12_003_000, 2)
}

// nodeRecord is the record id of node nodeID in root's node table.
func nodeRecord(t *testing.T, root *apptest.Client, nodeID int) int64 {
	t.Helper()
	var rows []struct {
		ID     int64 `json:"id"`
		NodeID int   `json:"node_id"`
	}
	root.OK("GET", "/api/cluster_node/", nil).Decode(t, &rows)
	for _, r := range rows {
		if r.NodeID == nodeID {
			return r.ID
		}
	}
	t.Fatalf("node %d is not in the table", nodeID)
	return 0
}

func TestClusterNotifyForwardedToOwner(t *testing.T) {
	apptest.Parallel(t)
	const appID, mchID, apiKey = "wx-test-app", "1900000109", "0123456789abcdef0123456789abcdef"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := map[string]string{"return_code": "SUCCESS", "result_code": "SUCCESS", "appid": appID, "mch_id": mchID,
			"nonce_str": "n0nce", "prepay_id": "wx-prepay-1", "trade_type": "NATIVE", "code_url": "weixin://wxpay/bizpayurl?pr=abc"}
		answer["sign"] = wechatSign(answer, apiKey)
		io.WriteString(w, wechatXML(answer))
	}))
	defer fake.Close()
	nodes := apptest.NewCluster(t, 3)
	roots := rootsOf(nodes)
	for _, root := range roots {
		root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{
			"app_id": appID, "mch_id": mchID, "api_key": apiKey, "notify_url": "https://example.com/notify", "gateway": fake.URL}})
	}
	topupOn(roots[0])
	dave, uid := nodes[0].NewUser("dave", user.RoleUser)
	a := topup(t, dave, map[string]any{"amount": 12.34, "pay_method": "mobile_a"})
	if a.Pay.Status != "success" {
		t.Fatalf("pay %+v", a.Pay)
	}
	waitEverywhere(t, roots, "the order", hasOrder(a.Order.ID))
	f := map[string]string{"appid": appID, "mch_id": mchID, "nonce_str": "n2", "return_code": "SUCCESS", "result_code": "SUCCESS",
		"out_trade_no": a.Order.OrderNo, "total_fee": "1234", "fee_type": "CNY", "transaction_id": "4200000001", "trade_type": "NATIVE"}
	f["sign"] = wechatSign(f, apiKey)
	body := wechatXML(f)

	// The owner is down: node 2 answers the provider FAIL, so it retries.
	nodes[0].Pause()
	if r := postNotify(t, nodes[1], "mobile_a", "text/xml", body, 1)[0]; !strings.Contains(r, "FAIL") {
		t.Fatalf("notification while the owner is down: %q", r)
	}
	if o := getOrder(t, roots[1], a.Order.ID); o.Status != 0 {
		t.Fatalf("order status %d while the owner is down", o.Status)
	}
	nodes[0].Resume()
	// Delivered 10 times to node 2 and 10 times to node 3: credited once.
	replies := make(chan []string, 2)
	for _, n := range nodes[1:] {
		go func() { replies <- postNotify(t, n, "mobile_a", "text/xml", body, 10) }()
	}
	for range 2 {
		for i, r := range <-replies {
			if !strings.Contains(r, "SUCCESS") {
				t.Errorf("delivery %d: %q", i, r)
			}
		}
	}
	quotaIs(t, nodes, roots, uid, 12_340_000, 1)
}
