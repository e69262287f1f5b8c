package billing

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// Balance slices: how nodes sharing a server database bill without a
// database round trip per call (docs/decisions/balance-slices.md).
//
// A node leases a slice of a user's balance (and of a limited key's quota)
// with one conditional update, recorded as a reservation row under the
// process's billing lease. Calls then hold and settle against the slice in
// memory; only their exact costs are written, taken from the slice's row
// in the ledger's group commits. A slice grows when a call finds too
// little in it, by what the waiting calls ask plus headroom: what is in use
// again, or the recent spend of sliceHorizon, whichever is more, capped in
// the transaction at a fair share of what the other nodes could still use
// (store.FairShare). A slice nobody used for sliceIdle goes back, as do all
// of them at Flush and when the process ends (store.EndLease); a killed
// process's slices come back with its lease (store.ReleaseExpiredLeases).

const (
	// sliceIdle is how long an unused slice stays with this node.
	sliceIdle = 2 * time.Second
	// sliceHorizon is the spend a slice's headroom covers.
	sliceHorizon = 2 * time.Second
	// sliceTick is how often the ledger looks for idle slices.
	sliceTick = 500 * time.Millisecond
	// maxGrowAttempts bounds a call's tries when other calls keep taking
	// what each grow added.
	maxGrowAttempts = 8
)

// sliceKey names a slice: a user's balance, and a limited key's quota
// with it (token 0 for the calls of unlimited keys).
type sliceKey struct{ user, token int64 }

// slice is this node's lease on part of one balance. What a call may hold
// is granted − pending − held.
type slice struct {
	key     sliceKey
	limited bool
	id      int64 // the reservation row; 0 until the first grant
	granted int64 // what the row holds, as far as this node knows
	pending int64 // costs settled, not committed yet
	held    int64 // holds of calls in flight
	calls   int   // calls holding from it
	waiting int   // calls waiting for it to grow
	used    time.Time
	spend   spendRate
	gone    bool // given back or dropped: its calls settle, nothing new holds
}

func (s *slice) available() int64 { return s.granted - s.pending - s.held }

// spendRate is the cost settled in the current and the previous second.
type spendRate struct {
	second      int64
	now, before int64
}

func (r *spendRate) add(at time.Time, cost int64) {
	sec := at.Unix()
	switch {
	case sec == r.second:
	case sec == r.second+1:
		r.before, r.now = r.now, 0
	default:
		r.before, r.now = 0, 0
	}
	r.second = sec
	r.now = satAdd(r.now, cost)
}

// perSecond is the spend of the last full second (or of this one, when it
// is already more).
func (r *spendRate) perSecond(at time.Time) int64 {
	switch at.Unix() {
	case r.second:
		return max(r.now, r.before)
	case r.second + 1:
		return r.now
	}
	return 0
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// sliceBook is every slice of this node.
type sliceBook struct {
	mu     sync.Mutex
	slices map[sliceKey]*slice
	byID   map[int64]*slice
	now    func() time.Time
}

func newSliceBook() *sliceBook {
	return &sliceBook{slices: map[sliceKey]*slice{}, byID: map[int64]*slice{}, now: time.Now}
}

func keyOf(op store.ReserveOp) sliceKey {
	if op.TokenLimited {
		return sliceKey{op.UserID, op.TokenID}
	}
	return sliceKey{op.UserID, 0}
}

// current is the live slice of op's balance, made when there is none.
// b.mu is held.
func (b *sliceBook) current(op store.ReserveOp) *slice {
	k := keyOf(op)
	s := b.slices[k]
	if s == nil || s.gone {
		s = &slice{key: k, limited: op.TokenLimited, used: b.now()}
		b.slices[k] = s
	}
	return s
}

// tryHold holds op.Amount from the slice, or, once the slice has tried to
// grow (partial), whatever it has down to op.Need() — the cap a single
// reservation of the whole balance would apply.
func (b *sliceBook) tryHold(op store.ReserveOp, partial bool) (Hold, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.current(op)
	amount := op.Amount
	if avail := s.available(); avail < amount {
		if !partial || avail < op.Need() {
			return Hold{}, false
		}
		amount = avail
	}
	s.held += amount
	s.calls++
	s.used = b.now()
	return Hold{Amount: amount, slice: s}, true
}

// wait counts a call waiting for op's slice to grow and returns the slice.
func (b *sliceBook) wait(op store.ReserveOp) *slice {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.current(op)
	s.waiting++
	return s
}

func (b *sliceBook) waited(s *slice) {
	b.mu.Lock()
	s.waiting--
	b.mu.Unlock()
}

// growOp is the reservation that grows s for the calls waiting on it:
// what they ask beyond what is available, plus headroom.
func (b *sliceBook) growOp(s *slice, waiters []*pendingReserve) store.ReserveOp {
	b.mu.Lock()
	defer b.mu.Unlock()
	var want int64
	need := int64(1<<63 - 1)
	for _, p := range waiters {
		want = satAdd(want, p.op.Amount)
		need = min(need, p.op.Need())
	}
	avail := max(s.available(), 0)
	shortfall := max(want-avail, 1)
	inUse := satAdd(s.held, want)
	headroom := max(inUse, s.spend.perSecond(b.now())*int64(sliceHorizon/time.Second))
	return store.ReserveOp{UserID: s.key.user, TokenID: s.key.token, TokenLimited: s.limited,
		Amount: satAdd(shortfall, headroom), Headroom: headroom, Min: max(need-avail, 1), Slice: s.id}
}

// granted adds what a grow committed to s. When s was given back while
// the grow was on its way (its calls gave up waiting), it returns the
// settlement that gives the grow's row back too.
func (b *sliceBook) granted(s *slice, r store.ReserveResult) (store.SettleOp, bool) {
	if r.Err != nil {
		return store.SettleOp{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.gone {
		return store.SettleOp{UserID: s.key.user, TokenID: s.key.token, TokenLimited: s.limited,
			ReservationID: r.ReservationID, Slice: true, EndSlice: true}, true
	}
	if s.id != r.ReservationID {
		delete(b.byID, s.id)
		s.id = r.ReservationID
		b.byID[s.id] = s
	}
	s.granted = satAdd(s.granted, r.Held)
	return store.SettleOp{}, false
}

// settled takes a call off its slice and turns its settlement into one
// against the slice's row; ok is false when there is nothing to write (a
// call that cost nothing).
func (b *sliceBook) settled(h Hold, op store.SettleOp) (store.SettleOp, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := h.slice
	s.held -= h.Amount
	s.calls--
	now := b.now()
	s.used = now
	if op.Cost == 0 && op.Log == nil {
		return op, false
	}
	s.pending = satAdd(s.pending, op.Cost)
	s.spend.add(now, op.Cost)
	op.Held, op.ReservationID, op.Slice = 0, s.id, true
	return op, true
}

// committed applies committed costs to their slices.
func (b *sliceBook) committed(ops []store.SettleOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range ops {
		if s := b.byID[op.ReservationID]; s != nil && op.Slice && !op.EndSlice {
			s.pending -= op.Cost
			s.granted -= op.Cost
		}
	}
}

// parked takes a settlement that became a dead letter out of pending: it
// was not charged to the slice (its replay charges the balance).
func (b *sliceBook) parked(op store.SettleOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.byID[op.ReservationID]; s != nil && op.Slice && !op.EndSlice {
		s.pending -= op.Cost
	}
}

// giveBack ends the slices no call holds or waits for and that were last
// used before cutoff, and returns the settlements that give their rows
// back.
func (b *sliceBook) giveBack(cutoff time.Time) []store.SettleOp {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ops []store.SettleOp
	for k, s := range b.slices {
		if s.calls > 0 || s.waiting > 0 || s.used.After(cutoff) {
			continue
		}
		s.gone = true
		delete(b.slices, k)
		if s.id == 0 {
			continue
		}
		delete(b.byID, s.id)
		ops = append(ops, store.SettleOp{UserID: k.user, TokenID: k.token, TokenLimited: s.limited,
			ReservationID: s.id, Slice: true, EndSlice: true})
	}
	return ops
}

// drop forgets every slice without giving anything back: the lease they
// were under is gone, and its janitor gave their rows back.
func (b *sliceBook) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slices {
		s.gone = true
	}
	clear(b.slices)
	clear(b.byID)
}

// refusal is the error of a call its slice cannot serve after a grow was
// refused with err: a limited key whose slice still holds some of its
// quota is short, not exhausted.
func (b *sliceBook) refusal(op store.ReserveOp, err error) error {
	if !errors.Is(err, store.ErrTokenQuota) || errors.Is(err, store.ErrTokenQuotaShort) {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.slices[keyOf(op)]; s != nil && s.available() > 0 {
		return store.ErrTokenQuotaShort
	}
	return err
}

// available is what the slice a call of user (and limited key) would hold
// from still has; 0 when there is none.
func (b *sliceBook) available(user, token int64, limited bool) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slices[keyOf(store.ReserveOp{UserID: user, TokenID: token, TokenLimited: limited})]
	if s == nil || s.gone {
		return 0
	}
	return max(s.available(), 0)
}

// Leased is what this node's slice for a call of user (and limited key)
// still has: money the database's balances do not show (0 without
// slices).
func (l *Ledger) Leased(userID, tokenID int64, limited bool) int64 {
	if l.slices == nil {
		return 0
	}
	return l.slices.available(userID, tokenID, limited)
}

// reserveSliced holds op from its slice, growing the slice when it has too
// little.
func (l *Ledger) reserveSliced(ctx context.Context, op store.ReserveOp) (Hold, error) {
	var growErr error
	for attempt := range maxGrowAttempts {
		if h, ok := l.slices.tryHold(op, attempt > 0); ok {
			return h, nil
		}
		if growErr != nil {
			return Hold{}, l.slices.refusal(op, growErr)
		}
		growErr = l.grow(ctx, op)
		if growErr != nil && !isRefusal(growErr) {
			return Hold{}, growErr
		}
	}
	return Hold{}, errBusy
}

func isRefusal(err error) bool {
	return errors.Is(err, store.ErrUserQuota) || errors.Is(err, store.ErrTokenQuota)
}

// grow asks the ledger goroutine to grow op's slice and waits for the
// commit; the ledger merges the calls waiting on one slice into one
// reservation (mergeGrows).
func (l *Ledger) grow(ctx context.Context, op store.ReserveOp) error {
	s := l.slices.wait(op)
	defer l.slices.waited(s)
	p := &pendingReserve{op: op, slice: s, result: make(chan store.ReserveResult, 1)}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	select {
	case l.reserves <- p:
	case <-ctx.Done():
		l.mu.RUnlock()
		return ctx.Err()
	}
	l.mu.RUnlock()
	select {
	case r := <-p.result:
		return r.Err
	case <-ctx.Done():
		return ctx.Err() // what the grow adds stays in the slice
	}
}

// mergeGrows replaces the grow requests of each slice among reserves by one
// reservation for all of them; the others pass unchanged.
func (l *Ledger) mergeGrows(reserves []*pendingReserve) []*pendingReserve {
	if l.slices == nil {
		return reserves
	}
	var out []*pendingReserve
	bySlice := map[*slice]*pendingReserve{}
	for _, p := range reserves {
		if p.slice == nil {
			out = append(out, p)
			continue
		}
		m := bySlice[p.slice]
		if m == nil {
			m = &pendingReserve{slice: p.slice}
			bySlice[p.slice] = m
			out = append(out, m)
		}
		m.waiters = append(m.waiters, p)
	}
	for s, m := range bySlice {
		m.op = l.slices.growOp(s, m.waiters)
	}
	return out
}

// answerGrow records what a merged grow committed and wakes its calls; it
// returns the settlement that gives the grow back when its slice is gone.
func (l *Ledger) answerGrow(m *pendingReserve, r store.ReserveResult) (store.SettleOp, bool) {
	back, ok := l.slices.granted(m.slice, r)
	for _, p := range m.waiters {
		p.result <- store.ReserveResult{Held: r.Held, ReservationID: r.ReservationID, Err: r.Err}
	}
	return back, ok
}

// LeaseLost tells the ledger that the billing lease its slices were under
// was released by another process (this one stalled past its TTL): their
// rows are gone, so calls take new slices.
func (l *Ledger) LeaseLost() {
	if l.slices != nil {
		l.slices.drop()
	}
	l.attachedMu.Lock()
	defer l.attachedMu.Unlock()
	for _, a := range l.attached {
		a.drop()
	}
}
