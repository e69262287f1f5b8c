package billing

import (
	"context"
	"errors"
	"sync"

	"github.com/modelgate/modelgate/internal/store"
)

var errBusy = errors.New("balance changing too often to hold; try again")

// account is one balance as the local ledger tracks it. What a call may
// still hold is balance − pending − held.
type account struct {
	balance int64 // the database value after every commit this ledger made
	pending int64 // settled costs queued but not yet committed
	held    int64 // holds of calls in flight (never written to the database)
	loaded  bool  // false: read balance from the database before use
	gen     int64 // bumped by every outside change, so a read that raced one is not trusted
}

func (a *account) available() int64 { return a.balance - a.pending - a.held }

// localBook keeps balances in memory when this process is the only writer
// of its database (SQLite): a hold then costs no database write at all, and
// only the exact cost of each call is ever written, by group commit. A
// crash loses the holds with the process, so nothing needs giving back.
//
// Balances are read from the database by the ledger goroutine, the only
// committer of settlements, so a read always matches what pending says is
// not yet committed. A balance changed by anyone else (a top-up, an admin
// edit) is marked unloaded by Changed and read again before its next hold.
type localBook struct {
	mu     sync.Mutex
	users  map[int64]*account
	tokens map[int64]*account
}

func newLocalBook() *localBook {
	return &localBook{users: map[int64]*account{}, tokens: map[int64]*account{}}
}

func get(m map[int64]*account, id int64) *account {
	a := m[id]
	if a == nil {
		a = &account{}
		m[id] = a
	}
	return a
}

// tryHold holds up to op.Amount, and at least op.Need(), when the accounts
// are loaded; ready is false when a balance must be read first.
func (b *localBook) tryHold(op store.ReserveOp) (held int64, err error, ready bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := get(b.users, op.UserID)
	var t *account
	if op.TokenLimited {
		t = get(b.tokens, op.TokenID)
	}
	if !u.loaded || (t != nil && !t.loaded) {
		return 0, nil, false
	}
	amount := min(op.Amount, u.available())
	var tokenLeft int64
	if t != nil {
		tokenLeft = t.available()
	}
	if err := store.RefusalOf(op, u.available(), tokenLeft); err != nil {
		return 0, err, true
	}
	if t != nil {
		amount = min(amount, tokenLeft)
		t.held += amount
	}
	u.held += amount
	return amount, nil, true
}

// settled moves a call from held to pending cost; the cost is committed
// later by the ledger goroutine (committed).
func (b *localBook) settled(op store.SettleOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := get(b.users, op.UserID)
	u.held -= op.Held
	u.pending += op.Cost
	if op.TokenLimited {
		t := get(b.tokens, op.TokenID)
		t.held -= op.Held
		t.pending += op.Cost
	}
}

// committed applies committed costs to the known balances.
func (b *localBook) committed(ops []store.SettleOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range ops {
		u := get(b.users, op.UserID)
		u.balance -= op.Cost
		u.pending -= op.Cost
		if op.TokenLimited {
			t := get(b.tokens, op.TokenID)
			t.balance -= op.Cost
			t.pending -= op.Cost
		}
	}
}

// parked takes a settlement that will not be committed (it became a dead
// letter) out of pending: the balance keeps what the database has. A replay
// is committed outside the ledger and makes the accounts be read again.
func (b *localBook) parked(op store.SettleOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	get(b.users, op.UserID).pending -= op.Cost
	if op.TokenLimited {
		get(b.tokens, op.TokenID).pending -= op.Cost
	}
}

// changed marks balances that someone other than the ledger changed.
func (b *localBook) changed(changes []store.Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range changes {
		if c.Billing {
			continue
		}
		switch c.Table {
		case "users":
			if a := b.users[c.ID]; a != nil {
				a.loaded = false
				a.gen++
			}
		case "tokens":
			if a := b.tokens[c.ID]; a != nil {
				a.loaded = false
				a.gen++
			}
		}
	}
}

// reread makes account id of m (users, tokens) be read again before its
// next hold, and takes held (a grant's hold, grants_owner.go) off it.
func (b *localBook) reread(m map[int64]*account, id, held int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := get(m, id)
	a.held -= held
	a.loaded = false
	a.gen++
}

// tryHoldToken is tryHold of a limited key's quota alone, for a grant of
// it (the user's balance is not held).
func (b *localBook) tryHoldToken(op store.ReserveOp) (held int64, err error, ready bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := get(b.tokens, op.TokenID)
	if !t.loaded {
		return 0, nil, false
	}
	left := t.available()
	if err := store.RefusalOf(op, max(left, op.Need()), left); err != nil {
		return 0, err, true
	}
	amount := min(op.Amount, left)
	t.held += amount
	return amount, nil, true
}

// load reads the unloaded balances among ops from the database. Only the
// ledger goroutine calls it, between commits.
func (b *localBook) load(ctx context.Context, st *store.Store, ops []store.ReserveOp) error {
	var userIDs, tokenIDs []int64
	userGen, tokenGen := map[int64]int64{}, map[int64]int64{}
	b.mu.Lock()
	for _, op := range ops {
		if a := get(b.users, op.UserID); !a.loaded {
			userIDs, userGen[op.UserID] = append(userIDs, op.UserID), a.gen
		}
		if a := get(b.tokens, op.TokenID); op.TokenLimited && !a.loaded {
			tokenIDs, tokenGen[op.TokenID] = append(tokenIDs, op.TokenID), a.gen
		}
	}
	b.mu.Unlock()
	if len(userIDs)+len(tokenIDs) == 0 {
		return nil
	}
	users, tokens, err := st.Balances(ctx, userIDs, tokenIDs)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// An unknown user or token has nothing to spend. A balance changed
	// again while it was read stays unloaded and is read once more.
	for _, id := range userIDs {
		if a := get(b.users, id); a.gen == userGen[id] {
			a.balance, a.loaded = users[id], true
		}
	}
	for _, id := range tokenIDs {
		if a := get(b.tokens, id); a.gen == tokenGen[id] {
			a.balance, a.loaded = tokens[id], true
		}
	}
	return nil
}

// pendingLoad asks the ledger goroutine to read an account's balances.
type pendingLoad struct {
	op   store.ReserveOp
	done chan error
}

// reserveLocal holds from the in-memory balances, asking the ledger
// goroutine to read a balance first when it is not loaded.
func (l *Ledger) reserveLocal(ctx context.Context, op store.ReserveOp) (Hold, error) {
	held, err := l.holdLocal(ctx, op, l.book.tryHold)
	if err != nil {
		return Hold{}, err
	}
	return Hold{Amount: held}, nil
}

// holdLocal holds op with try, asking the ledger goroutine to read the
// balances first when they are not loaded.
func (l *Ledger) holdLocal(ctx context.Context, op store.ReserveOp, try func(store.ReserveOp) (int64, error, bool)) (int64, error) {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	for attempt := 0; ; attempt++ {
		held, err, ready := try(op)
		if ready {
			return held, err
		}
		if attempt == 5 { // balances keep changing under the read
			return 0, errBusy
		}
		ld := &pendingLoad{op: op, done: make(chan error, 1)}
		select {
		case l.loads <- ld:
		case <-l.done:
			return 0, ErrClosed
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		select {
		case err := <-ld.done:
			if err != nil {
				return 0, err
			}
		case <-l.done:
			return 0, ErrClosed
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// spendable is what a user and a limited key may still hold, when both are
// loaded.
func (b *localBook) spendable(userID, tokenID int64, limited bool) (userLeft, tokenLeft int64, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.users[userID]
	if u == nil || !u.loaded {
		return 0, 0, false
	}
	if limited {
		t := b.tokens[tokenID]
		if t == nil || !t.loaded {
			return 0, 0, false
		}
		tokenLeft = t.available()
	}
	return u.available(), tokenLeft, true
}

// Spendable is what a user and (when limited) a key may still hold, as the
// in-memory ledger knows it, without holding anything; known is false when
// the ledger keeps no balances in memory (a shared database) or has not
// read them yet. A caller uses it only to refuse early a call that the
// reservation would refuse anyway.
func (l *Ledger) Spendable(userID, tokenID int64, limited bool) (userLeft, tokenLeft int64, known bool) {
	if l.book == nil {
		return 0, 0, false
	}
	return l.book.spendable(userID, tokenID, limited)
}
