package owner

import (
	"context"
	"errors"
	"testing"

	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/store"
)

func TestQuotaEditCheck(t *testing.T) {
	before := int64(5)
	for _, tc := range []struct {
		name string
		e    QuotaEdit
		ok   bool
	}{
		{"user", QuotaEdit{Table: TableUsers, ID: 2, Quota: 7, QuotaBefore: &before}, true},
		{"user without before", QuotaEdit{Table: TableUsers, ID: 2, Quota: 7}, false},
		{"no id", QuotaEdit{Table: TableUsers, Quota: 7, QuotaBefore: &before}, false},
		{"key", QuotaEdit{Table: TableTokens, ID: 2, UserID: 3, Quota: 7}, true},
		{"key without user", QuotaEdit{Table: TableTokens, ID: 2, Quota: 7}, false},
		{"key negative", QuotaEdit{Table: TableTokens, ID: 2, UserID: 3, Quota: -1}, false},
		{"other table", QuotaEdit{Table: "channels", ID: 2, Quota: 7}, false},
	} {
		if err := tc.e.check(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestBalancesRefuseWithoutStore: the refusals that come before the store
// (a row of another node on the owner's endpoint, an owner that cannot be
// reached) change nothing: the store is never touched.
func TestBalancesRefuseWithoutStore(t *testing.T) {
	b := NewBalances(nil, New(peer.Self{NodeID: 2, Secret: "s2"}, table{}))
	before := int64(0)
	if _, err := b.Apply(context.Background(), QuotaEdit{Table: TableUsers, ID: 51, Quota: 1, QuotaBefore: &before}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("row of node 1 on node 2: %v", err)
	}
	if _, err := NewBalances(nil, nil).Apply(context.Background(), QuotaEdit{Table: TableUsers, ID: 2, Quota: 1, QuotaBefore: &before}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("cluster mode off: %v", err)
	}
	edit := UserEdit{ID: 51, Patch: store.UserPatch{Quota: &store.QuotaChange{Before: 0, After: 1}}}
	if _, err := b.UpdateUser(context.Background(), edit); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("owner not in the table: %v", err)
	}
}
