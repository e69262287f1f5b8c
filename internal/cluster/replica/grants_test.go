package replica_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// TestGrantsOnTheOwner: the owner grants part of a balance it owns, once
// per key; a grantee's charges applied here lower its grant; a give-back
// lowers it; a restarted grantee's grants are settled only once its
// earlier events are applied here.
func TestGrantsOnTheOwner(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("granted")
		u.Quota = 1000
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		free := func() int64 {
			t.Helper()
			users, _, err := a.Balances(ctx, []int64{u.ID}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return users[u.ID]
		}
		grant := func(op store.GrantOp) (int64, error) {
			op.UserID, op.NodeID = u.ID, 2
			if op.Boot == "" {
				op.Boot = "boot-1"
			}
			return a.Grant(ctx, op)
		}
		if _, err := b.Grant(ctx, store.GrantOp{UserID: u.ID, NodeID: 1, Key: "x", Amount: 1, Boot: "b"}); !errors.Is(err, store.ErrNotGrantOwner) {
			t.Fatalf("grant on a node that does not own the user: %v", err)
		}
		// One node in a's table (itself): Min plus half of the rest.
		if got, err := grant(store.GrantOp{Key: "k1", Amount: 900, Min: 100}); err != nil || got != 100+900/2 {
			t.Fatalf("grant: %d, %v", got, err)
		}
		if got, err := grant(store.GrantOp{Key: "k1", Amount: 900, Min: 100}); err != nil || got != 550 || free() != 450 {
			t.Fatalf("the same call again: %d, %v, free %d", got, err, free())
		}
		if _, err := grant(store.GrantOp{Key: "k2", Amount: 900, Min: 451}); !errors.Is(err, store.ErrUserQuota) {
			t.Fatalf("grant above what is free: %v", err)
		}
		// b spends 50 of it: the charge lowers the balance and the grant.
		if _, err := b.ApplyBilling(ctx, nil, []store.SettleOp{{UserID: u.ID, Cost: 50}}); err != nil {
			t.Fatal(err)
		}
		apply(t, a, 2, pending(t, b, 0))
		if g, _ := a.GrantedTo(ctx, u.ID); g[2] != 500 || free() != 450 {
			t.Fatalf("after a charge of 50: grants %v, free %d", g, free())
		}
		if got, err := grant(store.GrantOp{Key: "k3", Amount: -300}); err != nil || got != -300 || free() != 750 {
			t.Fatalf("give-back: %d, %v, free %d", got, err, free())
		}
		// b restarts having charged 20 more, not yet applied here: its
		// grants are settled once the charge arrived.
		mark, _ := b.LastEventID(ctx)
		if _, err := b.ApplyBilling(ctx, nil, []store.SettleOp{{UserID: u.ID, Cost: 20}}); err != nil {
			t.Fatal(err)
		}
		through, _ := b.LastEventID(ctx)
		restart := store.GrantOp{Key: "r1", Amount: 10, Min: 10, Boot: "boot-2", Through: through}
		if _, err := grant(restart); !errors.Is(err, store.ErrGrantNotReady) {
			t.Fatalf("restart before its events arrived: %v", err)
		}
		apply(t, a, 2, pending(t, b, mark))
		if got, err := grant(restart); err != nil || got != 10 {
			t.Fatalf("restart: %d, %v", got, err)
		}
		if g, _ := a.GrantedTo(ctx, u.ID); g[2] != 10 || free() != 1000-70-10 {
			t.Fatalf("after the restart: grants %v, free %d", g, free())
		}
	})
}

// TestKeyGrantsOnTheOwner: a limited key's remain_quota is granted by the
// key's owner like a balance; a grantee's charges of the key lower the
// grant; a refusal tells an exhausted key from a short one.
func TestKeyGrantsOnTheOwner(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a, b := n[0], n[1]
		u := newUser("keyed")
		u.Quota = 1_000_000
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		tok := &store.Token{UserID: u.ID, Name: "k", KeyHash: "hash-keyed", KeyPrefix: "sk-", KeySuffix: "k", Status: 1, ExpiredTime: -1, RemainQuota: 100}
		if err := a.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		apply(t, b, 1, pending(t, a, 0))
		grant := func(key string, amount, least int64) (int64, error) {
			return a.Grant(ctx, store.GrantOp{UserID: u.ID, TokenID: tok.ID, NodeID: 2, Key: key, Amount: amount, Min: least, Boot: "boot"})
		}
		if got, err := grant("k1", 80, 10); err != nil || got != 10+90/2 {
			t.Fatalf("key grant: %d, %v", got, err)
		}
		if g, _ := a.GrantedOfToken(ctx, tok.ID); g[2] != 55 {
			t.Fatalf("key grants %v", g)
		}
		if g, _ := a.GrantedTo(ctx, u.ID); len(g) != 0 {
			t.Fatalf("a key grant counted as a balance grant: %v", g)
		}
		if _, err := grant("k2", 80, 46); !errors.Is(err, store.ErrTokenQuotaShort) {
			t.Fatalf("more than the key has free: %v", err)
		}
		if _, err := b.ApplyBilling(ctx, nil, []store.SettleOp{{UserID: u.ID, TokenID: tok.ID, TokenLimited: true, Cost: 30}}); err != nil {
			t.Fatal(err)
		}
		apply(t, a, 2, pending(t, b, 0))
		if g, _ := a.GrantedOfToken(ctx, tok.ID); g[2] != 25 {
			t.Fatalf("key grants after a charge of 30: %v", g)
		}
		if got, err := grant("k3", 45, 45); err != nil || got != 45 {
			t.Fatalf("the rest of the key: %d, %v", got, err)
		}
		if _, err := grant("k4", 1, 1); !errors.Is(err, store.ErrTokenQuota) || errors.Is(err, store.ErrTokenQuotaShort) {
			t.Fatalf("a key with nothing free: %v", err)
		}
	})
}

// TestOwnerEditsKeepGrants: on the owner, an admin's edit or debit cannot
// take a balance, or a key's quota, below what other nodes hold of it:
// they may still spend that, and the balance would end below zero.
func TestOwnerEditsKeepGrants(t *testing.T) {
	clusterStores(t, 2, func(t *testing.T, n []*node) {
		ctx := context.Background()
		a := n[0]
		u := newUser("edited")
		u.Quota = 1000
		if err := a.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		tok := &store.Token{UserID: u.ID, Name: "k", KeyHash: "hash-edited", KeyPrefix: "sk-", KeySuffix: "k", Status: 1, ExpiredTime: -1, RemainQuota: 100}
		if err := a.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		for _, op := range []store.GrantOp{{Key: "u", Amount: 500, Min: 500}, {TokenID: tok.ID, Key: "t", Amount: 50, Min: 50}} {
			op.UserID, op.NodeID, op.Boot = u.ID, 2, "boot"
			if _, err := a.Grant(ctx, op); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.MoveUserQuota(ctx, u.ID, store.QuotaChange{Before: 1000, After: 400}, nil); !errors.Is(err, store.ErrBalanceMoved) {
			t.Fatalf("edit below the grants: %v", err)
		}
		if got, err := a.MoveUserQuota(ctx, u.ID, store.QuotaChange{Before: 1000, After: 600}, nil); err != nil || got != 600 {
			t.Fatalf("edit above the grants: %d, %v", got, err)
		}
		if err := a.AddUserQuota(ctx, u.ID, -200, nil); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("debit into the grants: %v", err)
		}
		if err := a.AddUserQuota(ctx, u.ID, -100, nil); err != nil {
			t.Fatalf("debit of what is free: %v", err)
		}
		if _, err := a.SetTokenQuota(ctx, u.ID, tok.ID, 40, nil); !errors.Is(err, store.ErrBalanceMoved) {
			t.Fatalf("key edit below its grants: %v", err)
		}
		low := int64(30)
		if _, err := a.UpdateToken(ctx, u.ID, tok.ID, func(store.Token) (store.TokenPatch, error) {
			return store.TokenPatch{RemainQuota: &low}, nil
		}); !errors.Is(err, store.ErrBalanceMoved) {
			t.Fatalf("key update below its grants: %v", err)
		}
		if got, err := a.SetTokenQuota(ctx, u.ID, tok.ID, 60, nil); err != nil || got.RemainQuota != 60 {
			t.Fatalf("key edit above its grants: %+v, %v", got, err)
		}
	})
}
