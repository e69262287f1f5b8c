package replica_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// clusterStores opens n fresh databases of each engine as nodes 1..n with
// the outbox on.
func clusterStores(t *testing.T, n int, f func(t *testing.T, nodes []*node)) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			nodes := make([]*node, n)
			for i := range nodes {
				db := database{dsn: eng.FreshDSN(t), sqlitePath: filepath.Join(t.TempDir(), "node.db")}
				nodes[i] = db.open(t, i+1)
				nodes[i].EnableOutbox(replica.OutboxOptions{Logs: true})
			}
			f(t, nodes)
		})
	}
}

// pending returns node's outbox events after after.
func pending(t *testing.T, node *node, after int64) []replica.Event {
	t.Helper()
	evs, err := node.EventsAfter(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func apply(t *testing.T, to *node, source int, evs []replica.Event) (applied, skipped int) {
	t.Helper()
	applied, skipped, err := to.ApplyEvents(context.Background(), source, evs)
	if err != nil {
		t.Fatal(err)
	}
	return applied, skipped
}

func userOf(t *testing.T, s *node, id int64) (store.User, bool) {
	t.Helper()
	u, err := s.UserByID(context.Background(), id)
	if err != nil {
		return u, false
	}
	return u, true
}

func ptr[T any](v T) *T { return &v }

func TestApplyEventsOnceAndInOrder(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("alice")
		u.Quota = 500
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		// Above 2^31: PostgreSQL must not take the amount for an int4.
		if err := a.AddUserQuota(ctx, u.ID, 5_000_000_000_000, nil); err != nil {
			t.Fatal(err)
		}
		if err := a.UpdateUser(ctx, u.ID, store.UserPatch{DisplayName: ptr("Alice")}, nil); err != nil {
			t.Fatal(err)
		}
		evs := pending(t, a, 0)
		if len(evs) != 3 || evs[0].Op != "INSERT" || evs[1].Kind != replica.KindDelta || evs[2].Op != "UPDATE" {
			t.Fatalf("outbox %+v", evs)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].ID <= evs[i-1].ID || evs[i].Node() != 1 {
				t.Fatalf("event ids %d then %d", evs[i-1].ID, evs[i].ID)
			}
		}
		if applied, skipped := apply(t, b, 1, evs); applied != 3 || skipped != 0 {
			t.Fatalf("applied %d skipped %d", applied, skipped)
		}
		got, ok := userOf(t, b, u.ID)
		if !ok || got.Quota != 5_000_000_000_500 || got.DisplayName != "Alice" || got.Username != "alice" {
			t.Fatalf("on b: %+v", got)
		}
		// The same batch again (its answer was lost): nothing moves.
		if applied, skipped := apply(t, b, 1, evs); applied != 0 || skipped != 3 {
			t.Fatalf("again: applied %d skipped %d", applied, skipped)
		}
		if got, _ := userOf(t, b, u.ID); got.Quota != 5_000_000_000_500 {
			t.Fatalf("quota after a re-sent batch: %d", got.Quota)
		}
		// Applying wrote nothing to b's outbox.
		if evs := pending(t, b, 0); len(evs) != 0 {
			t.Fatalf("b's outbox after applying: %+v", evs)
		}
		// b's own event sent back to it is skipped (spec rule 1).
		if err := b.AddUserQuota(ctx, u.ID, 1, nil); err != nil {
			t.Fatal(err)
		}
		if applied, skipped := apply(t, b, 1, pending(t, b, 0)); applied != 0 || skipped != 1 {
			t.Fatalf("own events: applied %d skipped %d", applied, skipped)
		}
	})
}

func TestLastWriterWinsAndDeletesStay(t *testing.T) {
	clusterStores(t, 3, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b, c := n[0], n[1], n[2]
		u := newUser("bob")
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		create := pending(t, a, 0)
		apply(t, b, 1, create)
		apply(t, c, 1, create)
		// Both rename; b writes last, so b's name wins everywhere, in either
		// arrival order.
		if err := a.UpdateUser(ctx, u.ID, store.UserPatch{DisplayName: ptr("from a")}, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.UpdateUser(ctx, u.ID, store.UserPatch{DisplayName: ptr("from b")}, nil); err != nil {
			t.Fatal(err)
		}
		fromA, fromB := pending(t, a, create[len(create)-1].ID), pending(t, b, 0)
		apply(t, a, 2, fromB)
		apply(t, b, 1, fromA)
		apply(t, c, 2, fromB) // c gets b's first
		apply(t, c, 1, fromA)
		for i, s := range n {
			if got, _ := userOf(t, s, u.ID); got.DisplayName != "from b" {
				t.Fatalf("node %d kept %q", i+1, got.DisplayName)
			}
		}
		// A key: a deletes it after b renamed it; b's older rename arriving
		// at c after the delete does not bring the row back.
		tok := &store.Token{UserID: u.ID, Name: "k", KeyHash: "hash-k", KeyPrefix: "sk-", KeySuffix: "k", Status: 1, ExpiredTime: -1}
		if err := a.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		mark := fromA[len(fromA)-1].ID
		tokCreate := pending(t, a, mark)
		apply(t, b, 1, tokCreate)
		apply(t, c, 1, tokCreate)
		if _, err := b.UpdateToken(ctx, u.ID, tok.ID, func(store.Token) (store.TokenPatch, error) {
			return store.TokenPatch{Name: ptr("renamed")}, nil
		}); err != nil {
			t.Fatal(err)
		}
		older := pending(t, b, fromB[len(fromB)-1].ID)
		if err := a.DeleteToken(ctx, u.ID, tok.ID); err != nil {
			t.Fatal(err)
		}
		del := pending(t, a, tokCreate[len(tokCreate)-1].ID)
		apply(t, c, 1, del)
		if applied, skipped := apply(t, c, 2, older); applied != 0 || skipped != 1 {
			t.Fatalf("older update after delete: applied %d skipped %d", applied, skipped)
		}
		if _, err := c.UserToken(ctx, u.ID, tok.ID); err == nil {
			t.Fatal("the delete was undone by an older update")
		}
	})
}

func TestDeltaWaitsForItsRow(t *testing.T) {
	clusterStores(t, 3, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b, c := n[0], n[1], n[2]
		u := newUser("carol")
		u.Quota = 100
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		create := pending(t, a, 0)
		apply(t, b, 1, create)
		if err := b.AddUserQuota(ctx, u.ID, 50, nil); err != nil {
			t.Fatal(err)
		}
		// c hears of b's top-up before the user exists there.
		if applied, _ := apply(t, c, 2, pending(t, b, 0)); applied != 1 {
			t.Fatalf("parked delta counted as applied %d", applied)
		}
		if _, ok := userOf(t, c, u.ID); ok {
			t.Fatal("a delta created the row")
		}
		apply(t, c, 1, create)
		if got, _ := userOf(t, c, u.ID); got.Quota != 150 {
			t.Fatalf("quota on c = %d, want 150", got.Quota)
		}
	})
}

// A hold stays on its node: peers get the settled cost only, so the sum
// is right everywhere, and a node that dies holding money strands nothing
// on the others.
func TestHoldsDoNotReplicate(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("dave")
		u.Quota = 10_000
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		tok := &store.Token{UserID: u.ID, Name: "k", KeyHash: "hash-dave", KeyPrefix: "sk-", KeySuffix: "d", Status: 1,
			ExpiredTime: -1, RemainQuota: 5_000}
		if err := a.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		mark := pending(t, a, 0)
		apply(t, b, 1, mark)
		last := mark[len(mark)-1].ID
		res, err := a.ApplyBilling(ctx, []store.ReserveOp{{UserID: u.ID, TokenID: tok.ID, TokenLimited: true, Amount: 3_000}}, nil)
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("reserve: %v %+v", err, res)
		}
		// The hold alone sends peers nothing that moves money.
		held := pending(t, a, last)
		apply(t, b, 1, held)
		if got, _ := userOf(t, b, u.ID); got.Quota != 10_000 {
			t.Fatalf("b sees a hold: quota %d", got.Quota)
		}
		if len(held) > 0 {
			last = held[len(held)-1].ID
		}
		settle := store.SettleOp{UserID: u.ID, TokenID: tok.ID, TokenLimited: true, Held: res[0].Held, Cost: 1_200,
			ReservationID: res[0].ReservationID, Key: "call-1", Log: &store.Log{UserID: u.ID, Type: store.LogConsume, Quota: 1_200}}
		if _, err := a.ApplyBilling(ctx, nil, []store.SettleOp{settle}); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, last))
		for i, s := range n {
			got, _ := userOf(t, s, u.ID)
			k, err := s.UserToken(ctx, u.ID, tok.ID)
			if err != nil || got.Quota != 8_800 || got.UsedQuota != 1_200 || k.RemainQuota != 3_800 || k.UsedQuota != 1_200 {
				t.Fatalf("node %d: user %+v key %+v (%v)", i+1, got, k, err)
			}
		}
	})
}

// Plan usage holds stay on their node too: peers count each call's real
// use when it settles, and nothing for a released call.
func TestUsageHoldsDoNotReplicate(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		rule := planlimit.Rule{RequestPeriod: 100}
		kept, err := reserveUsage(a, 7, rule, 500, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		failed, err := reserveUsage(a, 7, rule, 300, usageNow)
		if err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		if req, tok, _ := usageOf(t, b, 7, usageNow); req != 0 || tok != 0 {
			t.Fatalf("b counts holds: %d requests, %d tokens", req, tok)
		}
		if _, err := a.SettleUsage(ctx, kept, 120); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ReleaseUsage(ctx, failed); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.ApplyEvents(ctx, 1, pending(t, a, 0)); err != nil {
			t.Fatal(err)
		}
		for i, s := range n {
			if req, tok, life := usageOf(t, s, 7, usageNow); req != 1 || tok != 120 || life != 120 {
				t.Fatalf("node %d: %d requests, %d tokens, %d lifetime; want 1, 120, 120", i+1, req, tok, life)
			}
		}
	})
}

// An event the database refuses for its values (here a username longer
// than its column, which PostgreSQL and MySQL refuse; SQLite keeps any
// length) is kept aside and skipped: the events after it still apply, and
// its node's stream is not stopped for good.
func TestPoisonEventDoesNotStopTheStream(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			db := database{dsn: eng.FreshDSN(t), sqlitePath: filepath.Join(t.TempDir(), "node.db")}
			b := db.open(t, 2)
			b.EnableOutbox(replica.OutboxOptions{Logs: true})
			long := make([]byte, 300)
			for i := range long {
				long[i] = 'x'
			}
			poison := replica.Event{ID: 51, Table: "users", Op: "INSERT", PK: 51, TimeUS: 1,
				Data: []byte(`{"id":51,"username":"` + string(long) + `","password_hash":"x","aff_code":"p1","quota":5}`)}
			good := replica.Event{ID: 101, Table: "users", Op: "INSERT", PK: 101, TimeUS: 2,
				Data: []byte(`{"id":101,"username":"fine","password_hash":"x","aff_code":"p2","quota":7}`)}
			applied, skipped, err := b.ApplyEvents(ctx, 1, []replica.Event{poison, good})
			if err != nil {
				t.Fatalf("the batch failed: %v", err)
			}
			if u, ok := userOf(t, b, 101); !ok || u.Quota != 7 {
				t.Fatalf("the event after the poison one: %+v %v", u, ok)
			}
			failed, err := b.FailedEvents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if eng.Name == "sqlite" {
				if applied != 2 || failed != 0 {
					t.Fatalf("sqlite: applied %d, failed %d", applied, failed)
				}
				return
			}
			if applied != 1 || skipped != 1 || failed != 1 {
				t.Fatalf("applied %d skipped %d kept %d; want 1, 1, 1", applied, skipped, failed)
			}
			if _, ok := userOf(t, b, 51); ok {
				t.Fatal("the refused row is there")
			}
		})
	}
}
