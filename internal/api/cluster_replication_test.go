package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/user"
)

// Three-node behaviour of replication (issue 11, "Done when"): a change made
// on any node reaches the others, checked through each node's API.

// trio is a cluster of three nodes with a root client on each.
type trio struct {
	nodes []*apptest.Env
	roots []*apptest.Client
}

func newTrio(t *testing.T, env ...string) trio {
	t.Helper()
	nodes := apptest.NewCluster(t, 3, env...)
	c := trio{nodes: nodes, roots: make([]*apptest.Client, len(nodes))}
	for i, n := range nodes {
		c.roots[i] = n.Root()
	}
	return c
}

// onAll waits until cond holds on every node, given that node's root.
func (c trio) onAll(t *testing.T, what string, cond func(root *apptest.Client) bool) {
	t.Helper()
	for i, r := range c.roots {
		apptest.Eventually(t, fmt.Sprintf("%s on node %d", what, i+1), func() bool { return cond(r) })
	}
}

// row reads one record by path as a map; ok is false when the answer is a
// failure (not found, or not replicated yet).
func row(t *testing.T, c *apptest.Client, path string) (map[string]any, bool) {
	t.Helper()
	r := c.Do("GET", path, nil)
	if !r.Success {
		return nil, false
	}
	var m map[string]any
	r.Decode(t, &m)
	return m, true
}

// listed finds the record with id in the list path answers; ok is false
// when it is not listed.
func listed(t *testing.T, c *apptest.Client, path string, id int64) (map[string]any, bool) {
	t.Helper()
	var rows []map[string]any
	c.OK("GET", path, nil).Decode(t, &rows)
	for _, m := range rows {
		if n, _ := m["id"].(float64); int64(n) == id {
			return m, true
		}
	}
	return nil, false
}

// idOf is the id of a created record's answer.
func idOf(t *testing.T, r *apptest.Response) int64 {
	t.Helper()
	var v struct {
		ID int64 `json:"id"`
	}
	r.Decode(t, &v)
	if v.ID == 0 {
		t.Fatalf("no id in %s", r.Raw)
	}
	return v.ID
}

// within polls cond for at most d: for effects that must come with the
// event, well before the 10 s cache reload.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loginEverywhere logs username in on every node once its user arrived.
func (c trio) loginEverywhere(t *testing.T, username string) []*apptest.Client {
	t.Helper()
	out := make([]*apptest.Client, len(c.nodes))
	for i, n := range c.nodes {
		cl := n.Client()
		apptest.Eventually(t, fmt.Sprintf("%s can log in on node %d", username, i+1), func() bool {
			return cl.Do("POST", "/api/user/login", map[string]string{"username": username, "password": "password-" + username}).Success
		})
		out[i] = cl
	}
	return out
}

func TestClusterReplicatesKeys(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	_, uid := c.nodes[0].NewUser("keyowner", user.RoleUser)
	users := c.loginEverywhere(t, "keyowner")

	// Created on node 2.
	tok := users[1].CreateToken(map[string]any{"name": "k1", "remain_quota": 5000, "unlimited_quota": false, "models": "gpt-test"})
	path := apptest.Path("/api/token/%d", tok.ID)
	for i, u := range users {
		apptest.Eventually(t, fmt.Sprintf("the key on node %d", i+1), func() bool {
			m, ok := row(t, u, path)
			return ok && m["name"] == "k1" && m["remain_quota"] == 5000.0 && m["models"] == "gpt-test" && m["user_id"] == float64(uid)
		})
	}
	// Updated on node 3: the name as a row, the quota as a delta.
	users[2].OK("PUT", "/api/token/", map[string]any{"id": tok.ID, "name": "k1-renamed", "remain_quota": 7000})
	for i, u := range users {
		apptest.Eventually(t, fmt.Sprintf("the update on node %d", i+1), func() bool {
			m, ok := row(t, u, path)
			return ok && m["name"] == "k1-renamed" && m["remain_quota"] == 7000.0 && m["models"] == "gpt-test"
		})
	}
	// Deleted on node 1.
	users[0].OK("DELETE", path, nil)
	for i, u := range users {
		apptest.Eventually(t, fmt.Sprintf("the delete on node %d", i+1), func() bool {
			_, ok := row(t, u, path)
			return !ok
		})
	}
}

func TestClusterReplicatesPrices(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	mp := idOf(t, c.roots[0].OK("POST", "/api/model_price/", map[string]any{"model_name": "m-repl", "input_price": 1.5, "output_price": 3}))
	c.onAll(t, "the model price", func(r *apptest.Client) bool {
		m, ok := listed(t, r, "/api/model_price/", mp)
		return ok && m["model_name"] == "m-repl" && m["input_price"] == 1.5 && m["output_price"] == 3.0
	})
	c.roots[1].OK("PUT", "/api/model_price/", map[string]any{"id": mp, "input_price": 2.25, "enabled": false})
	c.onAll(t, "the model price update", func(r *apptest.Client) bool {
		m, ok := listed(t, r, "/api/model_price/", mp)
		return ok && m["input_price"] == 2.25 && m["output_price"] == 3.0 && m["enabled"] == false
	})
	c.roots[2].OK("DELETE", apptest.Path("/api/model_price/%d", mp), nil)
	c.onAll(t, "the model price delete", func(r *apptest.Client) bool {
		_, ok := listed(t, r, "/api/model_price/", mp)
		return !ok
	})

	gp := idOf(t, c.roots[2].OK("POST", "/api/group_price/", map[string]any{"group_name": "vip", "model_name": "m-repl", "discount": 0.8}))
	c.onAll(t, "the group price", func(r *apptest.Client) bool {
		m, ok := listed(t, r, "/api/group_price/", gp)
		return ok && m["group_name"] == "vip" && m["model_name"] == "m-repl" && m["discount"] == 0.8
	})
	c.roots[0].OK("PUT", "/api/group_price/", map[string]any{"id": gp, "discount": 0.5})
	c.onAll(t, "the group price update", func(r *apptest.Client) bool {
		m, ok := listed(t, r, "/api/group_price/", gp)
		return ok && m["discount"] == 0.5
	})
	c.roots[1].OK("DELETE", apptest.Path("/api/group_price/%d", gp), nil)
	c.onAll(t, "the group price delete", func(r *apptest.Client) bool {
		_, ok := listed(t, r, "/api/group_price/", gp)
		return !ok
	})
}

func TestClusterReplicatesPlansAndSubscriptions(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	plan := createPlan(t, c.roots[0], planBody("replicated", "price", 12.5))
	planPath := apptest.Path("/api/plan/%d", plan.ID)
	c.onAll(t, "the plan", func(r *apptest.Client) bool {
		m, ok := row(t, r, planPath)
		return ok && m["name"] == "replicated" && m["price"] == 12.5 && m["default_model"] == "gpt-4o-mini"
	})
	c.roots[1].OK("PUT", "/api/plan/", map[string]any{"id": plan.ID, "name": "replicated-2", "price": 20})
	c.onAll(t, "the plan update", func(r *apptest.Client) bool {
		m, ok := row(t, r, planPath)
		return ok && m["name"] == "replicated-2" && m["price"] == 20.0
	})

	_, uid := c.nodes[0].NewUser("subscriber", user.RoleUser)
	c.onAll(t, "the subscriber", func(r *apptest.Client) bool { _, ok := userOn(t, r, uid); return ok })
	sub := idOf(t, c.roots[2].OK("POST", "/api/subscription/", map[string]any{"user_id": uid, "plan_id": plan.ID, "duration_days": 10, "notes": "n1"}))
	subPath := apptest.Path("/api/subscription/%d", sub)
	var end float64
	c.onAll(t, "the subscription", func(r *apptest.Client) bool {
		m, ok := row(t, r, subPath)
		if ok {
			end = m["end_time"].(float64)
		}
		return ok && m["user_id"] == float64(uid) && m["plan_id"] == float64(plan.ID) && m["notes"] == "n1"
	})
	c.roots[0].OK("PUT", "/api/subscription/", map[string]any{"id": sub, "end_time": end + 86400, "notes": "n2"})
	c.onAll(t, "the subscription update", func(r *apptest.Client) bool {
		m, ok := row(t, r, subPath)
		return ok && m["end_time"] == end+86400 && m["notes"] == "n2"
	})
	c.roots[1].OK("DELETE", subPath, nil)
	c.onAll(t, "the subscription delete", func(r *apptest.Client) bool { _, ok := row(t, r, subPath); return !ok })
	c.roots[2].OK("DELETE", planPath, nil)
	c.onAll(t, "the plan delete", func(r *apptest.Client) bool { _, ok := row(t, r, planPath); return !ok })
}

func TestClusterReplicatesSettingsAndOrders(t *testing.T) {
	apptest.Parallel(t)
	c := newTrio(t)
	// Settings made on node 1: top-up, a payment channel, an option.
	enableBank(c.roots[0])
	topupOn(c.roots[0])
	c.roots[0].OK("PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "Replicated Gate"})
	c.onAll(t, "the settings", func(r *apptest.Client) bool {
		var top struct {
			Enabled      bool    `json:"enabled"`
			AllowCustom  bool    `json:"allow_custom"`
			ExchangeRate float64 `json:"exchange_rate"`
		}
		r.OK("GET", "/api/setting/topup", nil).Decode(t, &top)
		pay := r.OK("GET", "/api/setting/payment", nil)
		opts := optionMap(t, r)
		return top.Enabled && top.AllowCustom && top.ExchangeRate == 1_000_000 &&
			strings.Contains(string(pay.Raw), "6222 0000 1111") && opts["SystemName"] == "Replicated Gate"
	})

	// A user's top-up order on node 2, paid by an admin on node 3: the
	// order and the credit reach every node.
	_, uid := c.nodes[0].NewUser("orderer", user.RoleUser)
	users := c.loginEverywhere(t, "orderer")
	o := topup(t, users[1], map[string]any{"preset_amount": 10, "pay_method": "bank"}).Order
	orderPath := apptest.Path("/api/order/%d", o.ID)
	c.onAll(t, "the top-up order", func(r *apptest.Client) bool {
		m, ok := row(t, r, orderPath)
		return ok && m["order_no"] == o.OrderNo && m["user_id"] == float64(uid) && m["status"] == 0.0
	})
	c.roots[2].OK("PUT", orderPath, map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "WIRE-REPL"})
	c.onAll(t, "the paid order and its credit", func(r *apptest.Client) bool {
		m, ok := row(t, r, orderPath)
		u, _ := userOn(t, r, uid)
		return ok && m["status"] == 1.0 && m["pay_trade_no"] == "WIRE-REPL" && u.Quota == 12_000_000
	})
	// The payment it records (received_payments, keyed by the order's id)
	// reaches every node: each node's revenue reconciles with its orders.
	c.onAll(t, "the received payment", func(r *apptest.Client) bool {
		var ov struct {
			Reconciliation struct {
				Received float64 `json:"received"`
				Balanced bool    `json:"balanced"`
			} `json:"reconciliation"`
		}
		r.OK("GET", "/api/admin/dashboard/overview", nil).Decode(t, &ov)
		return ov.Reconciliation.Received == 10 && ov.Reconciliation.Balanced
	})

	// A plan order on node 1, paid on node 2: its subscription reaches all.
	plan := createPlan(t, c.roots[0], planBody("ordered", "price", 30))
	c.onAll(t, "the plan", func(r *apptest.Client) bool { _, ok := row(t, r, apptest.Path("/api/plan/%d", plan.ID)); return ok })
	po := planOrder(t, users[0], map[string]any{"plan_id": plan.ID, "mode": "stack"})
	poPath := apptest.Path("/api/order/%d", po.ID)
	c.onAll(t, "the plan order", func(r *apptest.Client) bool {
		m, ok := row(t, r, poPath)
		return ok && m["plan_id"] == float64(plan.ID) && m["amount"] == 30.0
	})
	c.roots[1].OK("PUT", poPath, map[string]any{"status": 1, "pay_method": "offline"})
	c.onAll(t, "the subscription the plan order made", func(r *apptest.Client) bool {
		var subs []map[string]any
		r.OK("GET", apptest.Path("/api/subscription/?user_id=%d", uid), nil).Decode(t, &subs)
		m, _ := row(t, r, poPath)
		return m["status"] == 1.0 && len(subs) == 1 && subs[0]["order_id"] == float64(po.ID)
	})
	// Deleted by root on node 3.
	c.roots[2].OK("DELETE", orderPath, nil)
	c.onAll(t, "the order delete", func(r *apptest.Client) bool { _, ok := row(t, r, orderPath); return !ok })
}

func optionMap(t *testing.T, r *apptest.Client) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range options(t, r) {
		m[kv.Key] = kv.Value
	}
	return m
}
