package api_test

import (
	"reflect"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/user"
)

// A cluster whose nodes run on different engines (SQLite, PostgreSQL,
// MariaDB: whichever DSNs are set) replicates values exactly: rows are
// decoded into their Go types, so bools, floats, NULLs and big integers
// come out the same on every engine.
func TestClusterAcrossEngines(t *testing.T) {
	apptest.Parallel(t)
	engines := storetest.Engines()
	if len(engines) < 2 {
		t.Skip("needs a server engine: set MODELGATE_TEST_POSTGRES_DSN or MODELGATE_TEST_MYSQL_DSN")
	}
	c := trio{}
	for i, eng := range engines {
		dsn := ""
		if eng.Name != "sqlite" {
			dsn = eng.FreshDSN(t)
		}
		n := apptest.NewNode(t, i+1, apptest.NodeSecret(i+1), "CLUSTER_PING_INTERVAL", "1h",
			"CLUSTER_PUSH_INTERVAL", "100ms", "SQL_DSN", dsn)
		if got := n.Engine(); got != eng.Name {
			t.Fatalf("node %d runs %s, want %s", i+1, got, eng.Name)
		}
		c.nodes = append(c.nodes, n)
		c.roots = append(c.roots, n.Root())
	}
	for i := range c.nodes {
		for j, peer := range c.nodes {
			if i != j {
				peer.AddTo(c.roots[i], j+1)
			}
		}
	}

	// Written on the last engine, read everywhere.
	w := c.roots[len(c.roots)-1]
	_, uid := c.nodes[len(c.nodes)-1].NewUser("mixed", user.RoleUser)
	w.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 999_999_999_999_999})
	mp := idOf(t, w.OK("POST", "/api/model_price/", map[string]any{"model_name": "m-mixed", "input_price": 0.1,
		"output_price": 1e-7, "per_request_price": 123456.789, "enabled": false}))
	w.OK("PUT", "/api/option/", map[string]any{"key": "SystemName", "value": "多引擎 ✓"})

	first := c.roots[0]
	userOnFirst, _ := row(t, first, apptest.Path("/api/user/%d", uid))
	priceOn := func(r *apptest.Client) map[string]any {
		m, _ := listed(t, r, "/api/model_price/", mp)
		return m
	}
	c.onAll(t, "the rows", func(r *apptest.Client) bool {
		u, ok := row(t, r, apptest.Path("/api/user/%d", uid))
		p := priceOn(r)
		return ok && p != nil && u["quota"] == 999_999_999_999_999.0 && optionMap(t, r)["SystemName"] == "多引擎 ✓"
	})
	userOnFirst, _ = row(t, first, apptest.Path("/api/user/%d", uid))
	for i, r := range c.roots {
		u, _ := row(t, r, apptest.Path("/api/user/%d", uid))
		if !reflect.DeepEqual(u, userOnFirst) {
			t.Errorf("user on node %d: %v\nnode 1: %v", i+1, u, userOnFirst)
		}
		if p, p1 := priceOn(r), priceOn(first); !reflect.DeepEqual(p, p1) || p["enabled"] != false || p["output_price"] != 1e-7 {
			t.Errorf("price on node %d: %v\nnode 1: %v", i+1, p, p1)
		}
	}
	// The digests agree across engines: the same rows hash the same.
	settled(t, c.nodes)
	if rep := consistencyOf(t, first); !rep.Consistent {
		t.Errorf("consistency across engines: %+v", rep)
	}
}
