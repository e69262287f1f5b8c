package billing

import (
	"context"

	"github.com/modelgate/modelgate/internal/store"
)

// The owner's side of cluster grants (grants.go): applying a grantee's
// calls, and root's release of a gone node's grants.

// GrantTo applies a grantee node's call on this node, the owner of the
// balance (store.Grant). On SQLite the calls of this node hold in memory:
// a grant is first held from the in-memory balance (or key quota) like a
// call, so this node's calls and the grant never count the same money.
func (l *Ledger) GrantTo(ctx context.Context, op store.GrantOp) (int64, error) {
	if op.Amount <= 0 || l.book == nil {
		got, err := l.store.Grant(ctx, op)
		l.regranted(op, 0)
		return got, err
	}
	hold := store.ReserveOp{UserID: op.UserID, Amount: op.Amount, Min: op.Min}
	try := l.book.tryHold
	if op.TokenID != 0 {
		hold.TokenID, hold.TokenLimited = op.TokenID, true
		try = l.book.tryHoldToken
	}
	held, err := l.holdLocal(ctx, hold, try)
	if err != nil {
		return 0, err
	}
	op.Amount = held
	got, err := l.store.Grant(ctx, op)
	l.regranted(op, held)
	return got, err
}

// regranted makes the in-memory book read the balance op granted from
// again (the grants changed it) and drops the hold that covered the grant
// meanwhile.
func (l *Ledger) regranted(op store.GrantOp, held int64) {
	if l.book == nil {
		return
	}
	if op.TokenID != 0 {
		l.book.reread(l.book.tokens, op.TokenID, held)
	} else {
		l.book.reread(l.book.users, op.UserID, held)
	}
}

// ReleaseGrants drops every grant this node gave node (store.ReleaseGrants)
// and makes the in-memory balances read again.
func (l *Ledger) ReleaseGrants(ctx context.Context, node int) (rows int, amount int64, err error) {
	users, tokens, amount, err := l.store.ReleaseGrants(ctx, node)
	for _, id := range users {
		l.regranted(store.GrantOp{UserID: id}, 0)
	}
	for _, id := range tokens {
		l.regranted(store.GrantOp{TokenID: id}, 0)
	}
	return len(users) + len(tokens), amount, err
}
