package replica_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// TestOwnerBalanceEditsAreDeltasOnly: the owner's side of a forwarded
// balance edit writes the difference alone, never a row event, so its copy
// of the row's other fields cannot overwrite the forwarding node's changes
// by last writer wins; a stale before changes nothing.
func TestOwnerBalanceEditsAreDeltasOnly(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := &store.User{Username: "owned", Role: 1, Status: 1, Group: "default", Quota: 100}
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		tok := &store.Token{UserID: u.ID, Name: "k", KeyHash: "hash-owned", KeyPrefix: "sk-", KeySuffix: "k", Status: 1, ExpiredTime: -1, RemainQuota: 10}
		if err := a.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		created := pending(t, a, 0)
		apply(t, b, 1, created)
		mark := created[len(created)-1].ID

		logged := 0
		audit := func(before store.User) *store.Log {
			logged++
			return &store.Log{UserID: before.ID, Username: before.Username, Type: store.LogAdmin, Content: "edit"}
		}
		if _, err := a.MoveUserQuota(ctx, u.ID, store.QuotaChange{Before: 99, After: 500}, audit); !errors.Is(err, store.ErrBalanceMoved) {
			t.Fatalf("stale before: %v", err)
		}
		if _, err := a.SetTokenQuota(ctx, u.ID, tok.ID, 50, ptr(int64(9))); !errors.Is(err, store.ErrBalanceMoved) {
			t.Fatalf("stale token before: %v", err)
		}
		if _, err := a.SetTokenQuota(ctx, u.ID+1, tok.ID, 50, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another user's key: %v", err)
		}
		if got, err := a.MoveUserQuota(ctx, u.ID, store.QuotaChange{Before: 100, After: 500}, audit); err != nil || got != 500 {
			t.Fatalf("move: %d, %v", got, err)
		}
		if got, err := a.SetTokenQuota(ctx, u.ID, tok.ID, 50, nil); err != nil || got.RemainQuota != 50 {
			t.Fatalf("set: %+v, %v", got, err)
		}
		if got, err := a.SetTokenQuota(ctx, u.ID, tok.ID, 50, ptr(int64(50))); err != nil || got.RemainQuota != 50 {
			t.Fatalf("set again: %+v, %v", got, err)
		}
		evs := pending(t, a, mark)
		kinds := map[string]int{}
		for _, ev := range evs {
			kinds[ev.Table+"/"+ev.Kind]++
		}
		if kinds["users/delta"] != 1 || kinds["tokens/delta"] != 1 || kinds["users/"] != 0 || kinds["tokens/"] != 0 || logged != 1 {
			t.Fatalf("events %v, %d logs", kinds, logged)
		}
		apply(t, b, 1, evs)
		if got, _ := userOf(t, b, u.ID); got.Quota != 500 {
			t.Fatalf("peer's balance %d", got.Quota)
		}
		if got, err := b.UserToken(ctx, u.ID, tok.ID); err != nil || got.RemainQuota != 50 {
			t.Fatalf("peer's key %+v, %v", got, err)
		}
	})
}
