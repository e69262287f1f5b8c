package apptest

import (
	"sync"
	"testing"
)

// A fleet is gateway processes sharing one server database without cluster
// mode, as an operator scales out behind a load balancer: each node bills
// the same balances. A node may keep what it has queued for the database
// (settlements, held money) in memory until it flushes, so a balance read
// through one node is only whole once every node flushed: SettleAll on any
// node of a fleet flushes them all.
type fleet struct {
	mu    sync.Mutex
	nodes []*Env
}

// SecondNode starts another gateway on e's database with e's configuration
// (its Redis prefix included) and a data directory of its own, and returns
// it. From then on SettleAll on either node, and so Quota, Accounts and
// ConsumeLogs, commits what both have queued. It needs a server database:
// two processes on one SQLite file are not a supported deployment.
func (e *Env) SecondNode(t testing.TB) *Env {
	t.Helper()
	if e.attached {
		t.Fatal("SecondNode: the gateway was not started by this test")
	}
	if e.Config.SQLDSN == "" {
		t.Fatal("SecondNode: needs a server database (SQL_DSN), not SQLite")
	}
	cfg := e.Config
	cfg.DataDir = t.TempDir()
	n := Start(t, cfg)
	if e.fleet == nil {
		e.fleet = &fleet{nodes: []*Env{e}}
	}
	e.fleet.mu.Lock()
	e.fleet.nodes = append(e.fleet.nodes, n)
	e.fleet.mu.Unlock()
	n.fleet = e.fleet
	return n
}

// nodes is every running node whose queues SettleAll must flush: e alone,
// or its whole fleet.
func (e *Env) nodes() []*Env {
	if e.fleet == nil {
		return []*Env{e}
	}
	e.fleet.mu.Lock()
	defer e.fleet.mu.Unlock()
	var running []*Env
	for _, n := range e.fleet.nodes {
		if n.Server != nil {
			running = append(running, n)
		}
	}
	return running
}

// On is a client of node with c's session and headers: the same user, as a
// load balancer would send it to another node (sessions are signed with
// the shared SESSION_SECRET; cookies do not depend on the port).
func (c *Client) On(node *Env) *Client {
	return &Client{t: c.t, base: node.URL(), http: c.http, Header: c.Header.Clone()}
}

// On is the same relay setup seen through node: same user, key and
// channel, its calls and management requests sent to node.
func (g *Gateway) On(node *Env) *Gateway {
	v := *g
	v.Env, v.Root, v.User = node, g.Root.On(node), g.User.On(node)
	return &v
}
