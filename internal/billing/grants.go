package billing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// Cluster grants: how a node spends a balance another node owns
// (docs/decisions/cluster-grants.md). Every user, and every limited key,
// has one owner node (cluster.Owner); any other node spends the user's
// balance (the key's remain_quota) only from a grant the owner gave it: it asks the owner for one when its calls need
// more, holds and settles against it in memory, and gives back what it did
// not spend once the grant is idle. Its settled costs replicate as negative
// quota deltas, as every spend does; applying one, the owner lowers the
// grant by as much. So the nodes together never spend more than the
// balance, however the cluster is split: a node cut off from the owner
// spends what it holds and is then refused (ErrOwnerUnavailable).
//
// The grant is checked on top of the node's own book (local, slices): a
// call holds from both, so the node's view of the balance still bounds it.

const (
	// grantIdle is how long an unused grant stays with this node.
	grantIdle = 2 * time.Second
	// maxGrantWaits bounds how many grows of other calls one call waits for.
	maxGrantWaits = 64
	// grantTimeout bounds one call to the owner; the call waits for it.
	grantTimeout = 2 * time.Second
	// grantBackoff is how long calls are refused at once after the owner
	// could not be reached, before it is asked again.
	grantBackoff = time.Second
	// grantNotReadyWait is how long a call waits before asking again an
	// owner that has not applied this node's earlier events yet.
	grantNotReadyWait = 50 * time.Millisecond
	// ownerRemovedRecheck is how long a disabled owner is believed
	// disabled before the node table is read again.
	ownerRemovedRecheck = 5 * time.Second
)

// ErrOwnerUnavailable is a call refused because the user's owner node
// could not be asked for a grant and this node holds too little of the
// balance: retry later.
var ErrOwnerUnavailable = errors.New("owner node of the balance unavailable")

// GrantSource is the owners of balances, as a grantee sees them.
type GrantSource interface {
	// Local reports whether this node owns row id, a user or a key (no
	// grant needed).
	Local(id int64) bool
	// Grant sends op to the owner of its balance and returns what it
	// granted (or took back). It fails with store.ErrUserQuota,
	// ErrTokenQuota or ErrTokenQuotaShort when the owner refused for the
	// balance, store.ErrGrantNotReady when the owner waits for this
	// node's earlier events, store.ErrGrantOwnerRemoved when root
	// disabled the owner here, with another error when the owner could
	// not be asked or did not answer.
	Grant(ctx context.Context, op store.GrantOp) (int64, error)
}

// grantKey names a grant: of a user's balance (token 0), or of a limited
// key's remain_quota (user is then the key's user).
type grantKey struct{ user, token int64 }

// grant is this node's part of one balance. What a call may hold is
// granted − spent − held.
type grant struct {
	key     grantKey
	granted int64 // what the owner granted and was not given back
	spent   int64 // costs of calls settled from it
	held    int64 // holds of calls in flight
	calls   int
	waiting int
	used    time.Time
	spend   spendRate
	// asking is closed when the call to the owner in flight ends (nil: none).
	asking chan struct{}
	// refusal is the owner's last refusal of a grow (the balance short),
	// and refusals counts them: a call that waited for a grow the owner
	// refused answers that refusal when the grant still cannot serve it.
	refusal  error
	refusals int
	// unsure is a call whose answer was lost: the owner may have applied
	// it. It is sent again, under its key, before any other call.
	unsure *store.GrantOp
	// owed is given back amounts not sent yet (a lost answer came first).
	owed int64
	// downUntil refuses calls at once after the owner was unreachable.
	downUntil time.Time
	// removedUntil: root disabled the owner node here; until then calls
	// skip the grant (checked again after it).
	removedUntil time.Time
}

func (g *grant) available() int64 { return g.granted - g.spent - g.held }

// grantBook is the grants this node holds, one per balance.
type grantBook struct {
	source GrantSource
	self   int
	// lastEventID reads this node's newest outbox event (Config.LastEventID).
	lastEventID func(context.Context) (int64, error)
	log         *slog.Logger
	boot        string
	keys        atomic.Int64
	// calls are the calls to owners running in the background
	// (give-backs), waited for at the end.
	calls sync.WaitGroup

	mu      sync.Mutex
	grants  map[grantKey]*grant
	through int64 // this node's last event when it first asked (0 until then)
	started bool
	now     func() time.Time
}

func newGrantBook(source GrantSource, self int, lastEventID func(context.Context) (int64, error), log *slog.Logger) *grantBook {
	if lastEventID == nil {
		// No outbox to wait for (tests of the book alone): the owner
		// settles earlier grants at once.
		lastEventID = func(context.Context) (int64, error) { return 0, nil }
	}
	var b [8]byte
	rand.Read(b[:])
	return &grantBook{source: source, self: self, lastEventID: lastEventID, log: log, boot: hex.EncodeToString(b[:]),
		grants: map[grantKey]*grant{}, now: time.Now}
}

func (b *grantBook) get(k grantKey) *grant {
	g := b.grants[k]
	if g == nil {
		g = &grant{key: k, used: b.now()}
		b.grants[k] = g
	}
	return g
}

// keysOf are the grants a call of op holds from: its user's balance unless
// this node owns the user, and its limited key's quota unless this node
// owns the key.
func (b *grantBook) keysOf(op store.ReserveOp) []grantKey {
	var ks []grantKey
	if !b.source.Local(op.UserID) {
		ks = append(ks, grantKey{user: op.UserID})
	}
	if op.TokenLimited && !b.source.Local(op.TokenID) {
		ks = append(ks, grantKey{user: op.UserID, token: op.TokenID})
	}
	return ks
}

// hold holds op.Amount from the grant k, or, once the grant tried to grow,
// what it has down to op.Need(); it asks the owner for more when the grant
// has too little.
func (b *grantBook) hold(ctx context.Context, k grantKey, op store.ReserveOp) (*grant, int64, error) {
	var askErr error
	// attempts counts this call's own grows, waits the grows of other
	// calls it waited for: both bounded, so a call that keeps losing what
	// each grow added to other calls ends.
	attempts, waits, seen := 0, 0, -1
	for attempts < maxGrowAttempts && waits < maxGrantWaits {
		b.mu.Lock()
		g := b.get(k)
		if b.now().Before(g.removedUntil) {
			b.mu.Unlock()
			return nil, 0, store.ErrGrantOwnerRemoved
		}
		avail := g.available()
		// With the owner out of reach the grant cannot grow: a call takes
		// what it has, down to what it needs, as after a grow.
		down := b.now().Before(g.downUntil)
		tried := attempts > 0 || waits > 0
		if avail >= op.Amount || ((tried || down) && avail >= op.Need()) {
			amount := min(op.Amount, avail)
			g.held += amount
			g.calls++
			g.used = b.now()
			b.mu.Unlock()
			return g, amount, nil
		}
		if askErr == nil && seen >= 0 && g.refusals != seen {
			// The grow this call waited for was refused by the owner.
			askErr = g.refusal
		}
		if askErr != nil {
			b.mu.Unlock()
			return nil, 0, askErr
		}
		if wait := g.asking; wait != nil {
			g.waiting++
			seen = g.refusals
			b.mu.Unlock()
			if err := b.await(ctx, g, wait); err != nil {
				return nil, 0, err
			}
			waits++
			continue
		}
		if down {
			b.mu.Unlock()
			return nil, 0, ErrOwnerUnavailable
		}
		ask := b.growOp(g, op, avail)
		g.asking = make(chan struct{})
		b.mu.Unlock()
		var err error
		if askErr, err = b.grow(ctx, g, ask); err != nil {
			return nil, 0, err
		}
		attempts++
	}
	return nil, 0, ErrOwnerUnavailable
}

// await waits for the call to the owner another call of g made (wait),
// as one of g's waiting calls.
func (b *grantBook) await(ctx context.Context, g *grant, wait <-chan struct{}) error {
	select {
	case <-wait:
	case <-ctx.Done():
	}
	b.mu.Lock()
	g.waiting--
	b.mu.Unlock()
	return ctx.Err()
}

// grow asks g's owner for op (g.asking is set) and sorts the outcome: a
// refusal or an unreachable owner is askErr, for the caller to answer
// once the grant has nothing more for it; err ends the call at once.
func (b *grantBook) grow(ctx context.Context, g *grant, op store.GrantOp) (askErr, err error) {
	askErr = b.ask(g, op)
	switch {
	case errors.Is(askErr, store.ErrGrantNotReady):
		// This node's events before its restart are on their way to the
		// owner: ask again shortly.
		select {
		case <-time.After(grantNotReadyWait):
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case askErr == nil, isRefusal(askErr), errors.Is(askErr, ErrOwnerUnavailable):
		return askErr, nil
	case errors.Is(askErr, store.ErrGrantOwnerRemoved):
		b.mu.Lock()
		g.removedUntil = b.now().Add(ownerRemovedRecheck)
		b.mu.Unlock()
	}
	return nil, askErr
}

// growOp is the call that grows g for op: what op lacks, plus headroom —
// what g has in use again, or its spend of sliceHorizon, whichever is
// more. b.mu is held.
func (b *grantBook) growOp(g *grant, op store.ReserveOp, avail int64) store.GrantOp {
	avail = max(avail, 0)
	headroom := max(satAdd(g.held, op.Amount), g.spend.perSecond(b.now())*int64(sliceHorizon/time.Second))
	return store.GrantOp{UserID: g.key.user, TokenID: g.key.token, Amount: satAdd(max(op.Amount-avail, 1), headroom),
		Min: max(op.Need()-avail, 1)}
}

// release takes a call's hold off its grant and counts its cost as spent.
func (b *grantBook) release(g *grant, held, cost int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g.held -= held
	g.calls--
	now := b.now()
	g.used = now
	if cost > 0 {
		g.spent = satAdd(g.spent, cost)
		g.spend.add(now, cost)
	}
}

// shrink gives part of a call's hold back to its grant (the node's own
// book held less).
func (b *grantBook) shrink(g *grant, amount int64) {
	b.mu.Lock()
	g.held -= amount
	b.mu.Unlock()
}

// reserveGranted holds op from the grants it needs (its user's balance,
// then its limited key's quota), then from this node's own book: all must
// cover the call.
func (l *Ledger) reserveGranted(ctx context.Context, op store.ReserveOp) (Hold, error) {
	var h Hold
	amount := op.Amount
	for _, k := range l.grants.keysOf(op) {
		op.Amount = amount
		g, got, err := l.grants.hold(ctx, k, op)
		if errors.Is(err, store.ErrGrantOwnerRemoved) {
			// The owner left the cluster (disabled here by root): its
			// balance is spent against this node's view, as before grants.
			continue
		}
		if err != nil {
			l.grants.releaseHold(h.grants, amount, 0)
			return Hold{}, err
		}
		l.grants.shrinkHold(h.grants, amount-got)
		h.grants = append(h.grants, g)
		amount = got
	}
	op.Amount = amount
	inner, err := l.reserveHere(ctx, op)
	if err != nil {
		l.grants.releaseHold(h.grants, amount, 0)
		return Hold{}, err
	}
	l.grants.shrinkHold(h.grants, amount-inner.Amount)
	inner.grants = h.grants
	return inner, nil
}

// releaseHold takes a call's hold of held off each of its grants and
// counts its cost as spent of each.
func (b *grantBook) releaseHold(gs []*grant, held, cost int64) {
	for _, g := range gs {
		b.release(g, held, cost)
	}
}

// shrinkHold gives part of a call's hold back to each of its grants.
func (b *grantBook) shrinkHold(gs []*grant, amount int64) {
	if amount == 0 {
		return
	}
	for _, g := range gs {
		b.shrink(g, amount)
	}
}
