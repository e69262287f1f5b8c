// Package billing owns the money path of a relayed call: reserve before
// forwarding, settle to the exact cost after, release on failure
// (docs/architecture.md, Money).
//
// All three go through one Ledger goroutine that group-commits: every
// reservation and settlement waiting when a transaction starts is applied in
// that one transaction (store.ApplyBilling). A reservation waits for its
// commit, because the balance check must be atomic against every other
// node; a settlement does not, so the response to the client never waits on
// a database write. A crash loses at most the settlements of the last
// FlushInterval, which is always in the user's favour (the reservation they
// belong to was returned by nobody, so the lost amount is what was held).
//
// A settlement the database refuses never holds up the others: it is
// isolated from its batch, retried alone a bounded number of times and then
// parked as a dead letter for an admin to replay (commit.go). Each one
// carries a key, so applying it again never charges twice.
package billing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// Config tunes the ledger.
type Config struct {
	// Local says this process is the only writer of the database's
	// balances (SQLite): holds are then kept in memory (localBook) instead of
	// being written. Nodes sharing a server database must leave it false.
	Local bool
	// Slices makes a ledger on a shared server database lease slices of
	// balances and serve holds from them in memory (slices.go); off, every
	// hold is a reservation written in a group commit.
	Slices bool
	// Grants, in cluster mode, are the owners of balances: a user this
	// node does not own is spent only from a grant of its owner
	// (grants.go). Nil: every balance is this node's.
	Grants GrantSource
	// NodeID is this node's cluster id (with Grants).
	NodeID int
	// LastEventID reads this node's newest outbox event (replication's,
	// with Grants): an owner settles a restarted process's earlier grants
	// once it applied this node's events up to there. Nil reads 0.
	LastEventID func(context.Context) (int64, error)
	// FlushInterval is the longest a settlement waits for its commit when no
	// reservation starts a transaction earlier. Default 50 ms.
	FlushInterval time.Duration
	// MaxBatch bounds the operations of one transaction. Default 512.
	MaxBatch int
	Logger   *slog.Logger
}

// ErrClosed is returned by Reserve after Close.
var ErrClosed = errors.New("billing ledger closed")

// Ledger serialises billing writes into group commits.
type Ledger struct {
	store *store.Store
	cfg   Config
	log   *slog.Logger

	reserves chan *pendingReserve
	settles  *settleQueue
	loads    chan *pendingLoad
	flushes  chan chan struct{}
	quit     chan struct{}
	done     chan struct{}
	book     *localBook // nil unless Config.Local
	slices   *sliceBook // nil unless Config.Slices
	grants   *grantBook // nil unless Config.Grants
	// grantsDone is closed when the grants were given back at Close.
	grantsDone chan struct{}
	// attached are other slices given back with the balance's (plan
	// usage slices: attach).
	attachedMu sync.Mutex
	attached   []attachedSlices

	failed []*failedSettle // settlements waiting for a retry; the loop's own
	parked atomic.Int64
	// onCommit learns how long each group commit took (metrics).
	onCommit atomic.Pointer[func(time.Duration)]
	// settled counts the settlements committed since New.
	settled atomic.Int64

	closeOnce sync.Once
	mu        sync.RWMutex // held for reading while sending, for writing to close
	closed    bool
}

// pendingReserve is one caller waiting for its reservation. If the caller
// gives up (context ended) before the commit, the ledger releases what was
// held, so an abandoned request never keeps money.
type pendingReserve struct {
	op     store.ReserveOp
	mu     sync.Mutex
	gaveUp bool
	result chan store.ReserveResult // buffered 1
	// slice, for a call waiting for its slice to grow; waiters, for the
	// one reservation that grows a slice for all of them (mergeGrows).
	slice   *slice
	waiters []*pendingReserve
}

// New starts a ledger over st. Close it to flush.
func New(st *store.Store, cfg Config) *Ledger {
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 50 * time.Millisecond
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Ledger{
		store: st, cfg: cfg, log: cfg.Logger,
		reserves: make(chan *pendingReserve, 4096),
		settles:  newSettleQueue(cfg.MaxBatch),
		loads:    make(chan *pendingLoad, 1024),
		flushes:  make(chan chan struct{}),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if cfg.Local {
		l.book = newLocalBook()
	} else if cfg.Slices {
		l.slices = newSliceBook()
	}
	if cfg.Grants != nil {
		l.grants = newGrantBook(cfg.Grants, cfg.NodeID, cfg.LastEventID, cfg.Logger)
		l.grantsDone = make(chan struct{})
		go l.grants.run(l.quit, l.grantsDone)
	}
	go l.run()
	return l
}

// Hold is money reserved for one call: settle it with its ReservationID.
type Hold struct {
	Amount        int64
	ReservationID int64
	slice         *slice   // the slice it was held from (Config.Slices)
	grants        []*grant // the owners' grants it was held from too (Config.Grants)
}

// release is the settlement that gives a hold back unused.
func release(op store.ReserveOp, r store.ReserveResult) store.SettleOp {
	return store.SettleOp{UserID: op.UserID, TokenID: op.TokenID, TokenLimited: op.TokenLimited,
		Held: r.Held, ReservationID: r.ReservationID}
}

// Reserve holds up to op.Amount for a call and returns what it held. It
// fails with store.ErrUserQuota or store.ErrTokenQuota when nothing is
// available.
func (l *Ledger) Reserve(ctx context.Context, op store.ReserveOp) (Hold, error) {
	if l.grants != nil && len(l.grants.keysOf(op)) > 0 {
		return l.reserveGranted(ctx, op)
	}
	return l.reserveHere(ctx, op)
}

// reserveHere holds op from this node's own book of balances.
func (l *Ledger) reserveHere(ctx context.Context, op store.ReserveOp) (Hold, error) {
	if l.book != nil {
		return l.reserveLocal(ctx, op)
	}
	if l.slices != nil {
		return l.reserveSliced(ctx, op)
	}
	p := &pendingReserve{op: op, result: make(chan store.ReserveResult, 1)}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return Hold{}, ErrClosed
	}
	select {
	case l.reserves <- p:
	case <-ctx.Done():
		l.mu.RUnlock()
		return Hold{}, ctx.Err()
	}
	l.mu.RUnlock()
	select {
	case r := <-p.result:
		return Hold{Amount: r.Held, ReservationID: r.ReservationID}, r.Err
	case <-ctx.Done():
		p.mu.Lock()
		p.gaveUp = true
		p.mu.Unlock()
		// The result may have arrived meanwhile; then the ledger did not see
		// gaveUp and this caller returns the money.
		select {
		case r := <-p.result:
			if r.Err == nil && r.Held > 0 {
				l.Settle(release(op, r))
			}
		default:
		}
		return Hold{}, ctx.Err()
	}
}

// Settle queues a settlement (or, with Cost 0 and no Log, a release). It
// never blocks on the database; after Close it applies synchronously so no
// settlement is ever dropped.
func (l *Ledger) Settle(op store.SettleOp) {
	if l.book != nil {
		// The hold was never written: the database only learns the cost.
		l.book.settled(op)
		op.Held, op.ReservationID = 0, 0
	}
	l.mu.RLock()
	if !l.closed {
		l.settles.put(op)
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	l.settleClosed(op)
}

// SettleHold settles the call that holds h: Settle, or for a hold from a
// slice its settlement against the slice.
func (l *Ledger) SettleHold(h Hold, op store.SettleOp) {
	if h.grants != nil {
		l.grants.releaseHold(h.grants, h.Amount, op.Cost)
	}
	if h.slice != nil {
		var ok bool
		if op, ok = l.slices.settled(h, op); !ok {
			return
		}
	}
	l.Settle(op)
}

// Flush waits until every settlement queued before the call is committed
// (or has failed and waits for its retry), and gives back every slice no
// call holds.
func (l *Ledger) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case l.flushes <- done:
	case <-l.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting reservations and commits every queued settlement.
func (l *Ledger) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.quit)
	})
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if l.grantsDone == nil {
		return nil
	}
	select {
	case <-l.grantsDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Ledger) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	armRetry := func() {
		retry.Stop()
		if d, ok := l.nextRetry(); ok {
			retry.Reset(d)
		}
	}
	var idle <-chan time.Time
	if l.slices != nil {
		t := time.NewTicker(sliceTick)
		defer t.Stop()
		idle = t.C
	}
	var settles []store.SettleOp
	for {
		var reserves []*pendingReserve
		select {
		case now := <-idle:
			if back := l.giveBackSlices(now.Add(-sliceIdle)); len(back) > 0 {
				if len(settles) == 0 {
					timer.Reset(l.cfg.FlushInterval)
				}
				settles = append(settles, back...)
			}
			continue
		case <-retry.C:
			l.retryDue()
			armRetry()
			continue
		case ld := <-l.loads:
			ld.done <- l.book.load(context.Background(), l.store, []store.ReserveOp{ld.op})
			continue
		case done := <-l.flushes:
			// Everything queued before the flush request is in the queue.
			settles = append(settles, l.settles.take(maxQueuedSettles)...)
			settles = append(settles, l.giveBackSlices(time.Now().Add(time.Hour))...)
			for len(settles) > 0 {
				batch := settles[:min(len(settles), l.cfg.MaxBatch)]
				settles = append(l.commit(nil, batch), settles[len(batch):]...)
			}
			timer.Stop()
			armRetry()
			close(done)
			continue
		case p := <-l.reserves:
			reserves = append(reserves, p)
		case <-l.settles.ready:
			// The queue stopped being empty: its settlements wait for the
			// flush interval, unless they make a batch already.
			if len(settles)+l.settles.len() < l.cfg.MaxBatch {
				if len(settles) == 0 {
					timer.Reset(l.cfg.FlushInterval)
				}
				continue
			}
		case <-timer.C:
		case <-l.quit:
			l.drain(settles)
			return
		}
		// Take whatever else is waiting, up to the batch bound.
	gather:
		for len(reserves)+len(settles) < l.cfg.MaxBatch {
			select {
			case p := <-l.reserves:
				reserves = append(reserves, p)
			default:
				break gather
			}
		}
		settles = append(settles, l.settles.take(l.cfg.MaxBatch-len(reserves)-len(settles))...)
		if len(reserves) == 0 && len(settles) == 0 {
			continue
		}
		timer.Stop()
		settles = l.commit(reserves, settles)
		switch queued := l.settles.len(); {
		case len(settles)+queued >= l.cfg.MaxBatch:
			l.settles.signal() // a backlog: the next batch at once
		case len(settles)+queued > 0:
			timer.Reset(l.cfg.FlushInterval)
		}
		armRetry()
	}
}

// giveBackSlices ends the slices idle since cutoff (none without slices).
func (l *Ledger) giveBackSlices(cutoff time.Time) []store.SettleOp {
	if l.slices == nil {
		return nil
	}
	ops := l.slices.giveBack(cutoff)
	l.attachedMu.Lock()
	defer l.attachedMu.Unlock()
	for _, a := range l.attached {
		ops = append(ops, a.giveBack(cutoff)...)
	}
	return ops
}

// attachedSlices are slices other than the balance's that the ledger
// gives back when idle, at Flush and at Close, and drops with a lost lease.
type attachedSlices interface {
	giveBack(cutoff time.Time) []store.SettleOp
	drop()
}

// attach makes the ledger give back a's slices with its own.
func (l *Ledger) attach(a attachedSlices) {
	l.attachedMu.Lock()
	defer l.attachedMu.Unlock()
	l.attached = append(l.attached, a)
}

// Settled reports how many settlements were committed since New.
func (l *Ledger) Settled() int64 { return l.settled.Load() }

// Changed tells a local ledger that balances were committed by someone
// else; register it with store.OnCommit.
func (l *Ledger) Changed(changes []store.Change) {
	if l.book != nil {
		l.book.changed(changes)
	}
}

// OnCommit makes f learn how long each group commit's transaction took
// (metrics). f runs on the ledger's goroutine: it must be quick.
func (l *Ledger) OnCommit(f func(time.Duration)) { l.onCommit.Store(&f) }

// QueueDepth is how many reservations and settlements wait for a commit.
func (l *Ledger) QueueDepth() int { return len(l.reserves) + l.settles.len() }
