package consistency

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

func TestSamePositions(t *testing.T) {
	for _, c := range []struct {
		a, b map[string]int64
		want bool
	}{
		{nil, nil, true},
		{map[string]int64{"1": 51}, map[string]int64{"1": 51}, true},
		{map[string]int64{"1": 51, "2": 0}, map[string]int64{"1": 51}, true}, // absent is 0
		{map[string]int64{"1": 101}, map[string]int64{"1": 51}, false},
		{map[string]int64{"1": 51}, map[string]int64{"1": 51, "3": 53}, false},
	} {
		if got := samePositions(c.a, c.b); got != c.want {
			t.Errorf("samePositions(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestCompareTables(t *testing.T) {
	here := []replica.TableDigest{{Table: "users", Rows: 2, Hash: "a"}, {Table: "logs", Rows: 5, Hash: "b"},
		{Table: "tokens", Rows: 1, Hash: "c"}, {Table: "channels", Rows: 1, Hash: "d"}}
	there := []replica.TableDigest{{Table: "users", Rows: 2, Hash: "a"}, {Table: "tokens", Rows: 1, Hash: "x"},
		{Table: "channels", Rows: 2, Hash: "d"}}
	tables, differing := compareTables(here, there)
	if len(tables) != 3 || !slices.Equal(differing, []string{"tokens", "channels"}) {
		t.Fatalf("tables %+v, differing %v (logs, on one side only, not compared)", tables, differing)
	}
}

// fakeStore is this node: one peer, and a digest at fixed positions.
type fakeStore struct {
	peer   store.ClusterNode
	digest replica.Digest
}

func (f fakeStore) Digest(context.Context) (replica.Digest, error) { return f.digest, nil }
func (f fakeStore) AllClusterNodes(context.Context) ([]store.ClusterNode, error) {
	return []store.ClusterNode{f.peer, {NodeID: 3, Address: "http://unused", SecretKey: ""}}, nil
}

// A peer whose positions differ is asked again, and reported not caught
// up when they never meet; one whose positions meet is compared.
func TestCheckRetriesUntilCaughtUp(t *testing.T) {
	var calls atomic.Int32
	behindUntil := int32(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Cluster-Secret") != "s2" || r.URL.Path != DigestPath {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		pos := `{"1":51}`
		if calls.Add(1) < behindUntil {
			pos = `{"1":1}`
		}
		w.Write([]byte(`{"success":true,"data":{"node_id":2,"positions":` + pos +
			`,"tables":[{"table":"users","rows":1,"hash":"h"}]}}`))
	}))
	defer srv.Close()
	here := replica.Digest{NodeID: 1, Positions: map[string]int64{"1": 51}, Tables: []replica.TableDigest{{Table: "users", Rows: 1, Hash: "h"}}}
	c := &Checker{Store: fakeStore{peer: store.ClusterNode{NodeID: 2, Address: srv.URL, SecretKey: "s2"}, digest: here}, Self: peer.Self{NodeID: 1, Secret: "s1"}, Wait: 1}
	rep, err := c.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Consistent || len(rep.Peers) != 1 || !rep.Peers[0].CaughtUp || calls.Load() != 2 {
		t.Fatalf("report %+v after %d calls", rep, calls.Load())
	}
	behindUntil, calls = 100, atomic.Int32{}
	rep, _ = c.Check(context.Background())
	if rep.Consistent || rep.Peers[0].CaughtUp || calls.Load() != 3 || len(rep.Peers[0].Differing) != 0 {
		t.Fatalf("never caught up: %+v after %d calls", rep, calls.Load())
	}
	c.Store = fakeStore{peer: store.ClusterNode{NodeID: 2, Address: srv.URL, SecretKey: "wrong"}, digest: here}
	rep, _ = c.Check(context.Background())
	if p := rep.Peers[0]; p.OK || !strings.Contains(p.Error, "HTTP 401") || strings.Contains(p.Error, "wrong") || rep.Consistent {
		t.Fatalf("refused: %+v", rep)
	}
}
