package replica_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

// Each node's events are numbered seq 1, 2, 3, … without a gap (issue 24
// §2), also when transactions roll back and when writers run at once: a
// receiver refuses a gap, so a gap the outbox made itself would stop the
// node's stream for good.
func TestOutboxIDsHaveNoGaps(t *testing.T) {
	clusterStores(t, 1, func(t *testing.T, n []*node) {
		ctx := context.Background()
		s := n[0]
		u := newUser("gapless")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		// A transaction that changed a row and rolled back.
		rollback := errors.New("roll back")
		err := s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.AddUserQuota(u.ID, 5); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		// Writers at once, on one row (conflicts, deadlock retries on the
		// server engines) and on their own rows, some rolling back.
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := newUser(fmt.Sprintf("writer%d", w))
				if err := s.CreateUser(ctx, own); err != nil {
					t.Error(err)
					return
				}
				for k := range 8 {
					err := s.InTx(ctx, func(tx *store.Tx) error {
						if err := tx.AddUserQuota(u.ID, 1); err != nil {
							return err
						}
						if err := tx.AddUserQuota(own.ID, 1); err != nil {
							return err
						}
						if k%3 == 0 {
							return rollback
						}
						return nil
					})
					if err != nil && !errors.Is(err, rollback) {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		evs := pending(t, s, 0)
		if len(evs) < 6*5 {
			t.Fatalf("%d events", len(evs))
		}
		for i, ev := range evs {
			if want := int64(i+1)*50 + 1; ev.ID != want {
				t.Fatalf("event %d has id %d, want %d (seq %d): a gap", i, ev.ID, want, i+1)
			}
		}
	})
}

// A batch that does not continue the applied mark one seq at a time is
// refused whole: nothing applied, the mark unchanged, the event needed
// named.
func TestApplyEventsRefusesGaps(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("seq")
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := a.AddUserQuota(ctx, u.ID, 10, nil); err != nil {
				t.Fatal(err)
			}
		}
		evs := pending(t, a, 0) // seq 1..5
		if len(evs) != 5 {
			t.Fatalf("%d events", len(evs))
		}
		refused := func(what string, batch []replica.Event, want int64) {
			t.Helper()
			_, _, err := b.ApplyEvents(ctx, 1, batch)
			var gap *replica.SequenceError
			if !errors.As(err, &gap) || gap.Expected != want || gap.Source != 1 {
				t.Fatalf("%s: err %v, want a sequence error expecting %d", what, err, want)
			}
		}
		refused("skipping seq 1", evs[1:], evs[0].ID)
		apply(t, b, 1, evs[:2])
		refused("a gap", evs[3:], evs[2].ID)
		refused("a lower id later", []replica.Event{evs[2], evs[3], evs[0]}, evs[2].ID)
		forged := evs[2]
		forged.ID = 1_000_000*50 + 1
		refused("a forged high id", []replica.Event{forged}, evs[2].ID)
		if got, _ := userOf(t, b, u.ID); got.Quota != 10 {
			t.Fatalf("quota %d after refused batches, want 10 (seq 1 and 2)", got.Quota)
		}
		marks, err := b.AppliedMarks(ctx)
		if err != nil || marks[1] != evs[1].ID {
			t.Fatalf("mark %d (%v), want %d", marks[1], err, evs[1].ID)
		}
		// The rest in order applies; the forged id did not move the mark.
		if applied, skipped := apply(t, b, 1, evs); applied != 3 || skipped != 2 {
			t.Fatalf("applied %d skipped %d", applied, skipped)
		}
		if got, _ := userOf(t, b, u.ID); got.Quota != 40 {
			t.Fatalf("quota %d, want 40", got.Quota)
		}
	})
}

// ReplicationState counts the events a peer has not acknowledged (not a
// difference of ids) and names the oldest event kept.
func TestReplicationState(t *testing.T) {
	clusterStores(t, 1, func(t *testing.T, n []*node) {
		ctx := context.Background()
		s := n[0]
		for _, id := range []int{2, 3} {
			if err := s.CreateClusterNode(ctx, &store.ClusterNode{NodeID: id, NodeName: fmt.Sprint("n", id), Address: "http://n", SecretKey: "k"}); err != nil {
				t.Fatal(err)
			}
		}
		u := newUser("counted")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		for range 6 {
			if err := s.AddUserQuota(ctx, u.ID, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		evs := pending(t, s, 0) // 7 events
		if err := s.SetClusterCursor(ctx, 2, evs[4].ID); err != nil {
			t.Fatal(err)
		}
		reps, start, err := s.ReplicationState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if start != evs[0].ID {
			t.Fatalf("start %d, want %d", start, evs[0].ID)
		}
		if r := reps[2]; r.Pending != 2 || r.Acked != evs[4].ID || r.OldestPending == 0 {
			t.Fatalf("node 2: %+v", r)
		}
		if r := reps[3]; r.Pending != 7 || r.Acked != 0 {
			t.Fatalf("node 3: %+v", r)
		}
		// Rewinding only moves back; pruning moves the start.
		if err := s.RewindClusterCursor(ctx, 2, evs[5].ID); err != nil {
			t.Fatal(err)
		}
		if err := s.RewindClusterCursor(ctx, 2, evs[1].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PruneEvents(ctx, evs[2].ID, time.Now().Add(time.Hour).Unix(), 0); err != nil {
			t.Fatal(err)
		}
		reps, start, err = s.ReplicationState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := reps[2]; r.Acked != evs[1].ID || r.Pending != 4 || start != evs[3].ID {
			t.Fatalf("after rewind and prune: %+v, start %d", r, start)
		}
		// Pruned empty: the start is the next id to be written.
		if _, err := s.PruneEvents(ctx, 0, 0, time.Now().Add(time.Hour).Unix()); err != nil {
			t.Fatal(err)
		}
		if _, start, err = s.ReplicationState(ctx); err != nil || start != evs[6].ID+50 {
			t.Fatalf("start of an empty outbox %d (%v), want %d", start, err, evs[6].ID+50)
		}
	})
}
