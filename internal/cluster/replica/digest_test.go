package replica_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

func digestOf(t *testing.T, s *node) map[string]replica.TableDigest {
	t.Helper()
	d, err := s.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]replica.TableDigest{}
	for _, td := range d.Tables {
		out[td.Table] = td
	}
	return out
}

// Two nodes that applied the same events have the same digest (each
// node's seeds are left out: TestClusterConsistencyCheck); a row changed
// on one node alone changes its table's hash only.
func TestDigestOfConvergedNodes(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("alice")
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := a.AddUserQuota(ctx, u.ID, 700, &store.Log{UserID: u.ID, Type: store.LogTopup, Content: "top-up"}); err != nil {
			t.Fatal(err)
		}
		if err := a.SetOptions(ctx, map[string]string{"SystemName": "gate"}); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		da, db := digestOf(t, a), digestOf(t, b)
		for table, d := range da {
			if db[table] != d {
				t.Errorf("%s: %+v on node 1, %+v on node 2", table, d, db[table])
			}
		}
		if da["users"].Rows != 1 || da["logs"].Rows != 1 || da["options"].Rows != 1 {
			t.Fatalf("digest %+v", da)
		}
		if err := b.UpdateUser(ctx, u.ID, store.UserPatch{DisplayName: ptr("Bee")}, nil); err != nil {
			t.Fatal(err)
		}
		db = digestOf(t, b)
		for table, d := range da {
			if (db[table] != d) != (table == "users") {
				t.Errorf("after node 2's change, %s: %+v vs %+v", table, d, db[table])
			}
		}
	})
}

// snapshotOf is s's snapshot as a line reader for LoadSnapshot and
// ResyncSnapshot.
func snapshotOf(t *testing.T, s *node) func() ([]byte, error) {
	t.Helper()
	var lines [][]byte
	if err := s.WriteSnapshot(context.Background(), func(line []byte) error {
		lines = append(lines, append([]byte(nil), line...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return func() ([]byte, error) {
		if len(lines) == 0 {
			return nil, io.EOF
		}
		l := lines[0]
		lines = lines[1:]
		return l, nil
	}
}

// A node with data resyncs from a peer that has events it missed: its own
// event the peer has not applied is replayed over the snapshot, and once
// the peer applies it too both nodes have the same digest, the top-ups
// counted once each.
func TestResyncReplaysOwnEvents(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("alice")
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		if err := a.AddUserQuota(ctx, u.ID, 1000, nil); err != nil { // b misses it
			t.Fatal(err)
		}
		if err := b.AddUserQuota(ctx, u.ID, 30, nil); err != nil { // a has not got it
			t.Fatal(err)
		}
		r, err := b.ResyncSnapshot(ctx, snapshotOf(t, a), false)
		if err != nil {
			t.Fatal(err)
		}
		if r.Replayed != 1 || r.Rows == 0 {
			t.Fatalf("resync %+v", r)
		}
		if got, _ := userOf(t, b, u.ID); got.Quota != 1030 {
			t.Fatalf("quota on node 2 after the resync: %d, want 1030", got.Quota)
		}
		apply(t, a, 2, pending(t, b, 0))
		if got, _ := userOf(t, a, u.ID); got.Quota != 1030 {
			t.Fatalf("quota on node 1: %d, want 1030", got.Quota)
		}
		da, db := digestOf(t, a), digestOf(t, b)
		for table, d := range da {
			if db[table] != d {
				t.Errorf("%s: %+v on node 1, %+v on node 2", table, d, db[table])
			}
		}
		// Node 2's own events gone from its outbox before node 1 applied
		// them: refused unless forced.
		if err := b.AddUserQuota(ctx, u.ID, 5, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.PruneEvents(ctx, 1<<62, 1<<40, 1<<40); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ResyncSnapshot(ctx, snapshotOf(t, a), false); !errors.Is(err, replica.ErrOwnEventsPruned) {
			t.Fatalf("resync with own events lost: %v", err)
		}
		if _, err := b.ResyncSnapshot(ctx, snapshotOf(t, a), true); err != nil {
			t.Fatal(err)
		}
		if got, _ := userOf(t, b, u.ID); got.Quota != 1030 {
			t.Fatalf("quota on node 2 after a forced resync: %d, want node 1's 1030", got.Quota)
		}
	})
}

// Holds in flight never replicate: the digest gives them back, so a node
// holding money for a call compares equal; a resync takes the resyncing
// node's own holds out of the loaded balance again.
func TestDigestAndResyncWithHolds(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("alice")
		u.Quota = 1000
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		if _, err := a.ApplyBilling(ctx, []store.ReserveOp{{UserID: u.ID, Amount: 300}}, nil); err != nil {
			t.Fatal(err)
		}
		if held, _ := userOf(t, a, u.ID); held.Quota != 700 {
			t.Fatalf("stored quota with the hold: %d, want 700", held.Quota)
		}
		if got, want := digestOf(t, a)["users"], digestOf(t, b)["users"]; got != want {
			t.Fatalf("with a hold on node 1: %+v vs %+v", got, want)
		}
		if _, err := b.ApplyBilling(ctx, []store.ReserveOp{{UserID: u.ID, Amount: 200}}, nil); err != nil {
			t.Fatal(err)
		}
		before, _ := userOf(t, b, u.ID)
		if before.Quota != 800 {
			t.Fatalf("stored quota on node 2 with its hold: %d, want 800", before.Quota)
		}
		if _, err := b.ResyncSnapshot(ctx, snapshotOf(t, a), false); err != nil {
			t.Fatal(err)
		}
		if after, _ := userOf(t, b, u.ID); after.Quota != before.Quota {
			t.Fatalf("stored quota on node 2: %d before the resync, %d after", before.Quota, after.Quota)
		}
		if got, want := digestOf(t, a)["users"], digestOf(t, b)["users"]; got != want {
			t.Fatalf("after the resync: %+v vs %+v", got, want)
		}
	})
}
