package billing

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// Plan usage slices: balance slices (slices.go) for a subscription's limits
// of one model, on a shared server database. The node counts a slice of
// requests and tokens into the usage counters at once
// (store.GrowUsageSlice, capped at a fair share of what the tightest limit
// has left), serves calls from it in memory, and writes each call's real
// use into the slice's row with its consume log in the ledger's group
// commit. A slice goes back when idle for sliceIdle, when its fine bucket
// is over (a slice counts in one bucket), at Flush and at the end of the
// process; a dead process's slices come back with its billing lease.

type usageSliceKey struct {
	subscription int64
	model        string
}

// usageSlice is this node's slice of one subscription's use of one model.
type usageSlice struct {
	key     usageSliceKey
	userID  int64
	holdKey string // "" until the first grant
	bucket  int64  // the fine bucket it counts in
	// requests and tokens were counted in the database for this slice;
	// usedRequests and usedTokens are its calls', in flight (estimates,
	// heldTokens of them) and settled (real).
	requests, tokens         int64
	usedRequests, usedTokens int64
	heldTokens               int64
	calls, waiting           int
	used                     time.Time
	rateRequests, rateTokens spendRate
	// decision is the last grant's, for the least call it was asked for
	// (leastTokens); sinceRequests and sinceTokens are the uses since,
	// so each call's rate-limit headers count them.
	decision                   planlimit.Decision
	leastTokens                int64
	sinceRequests, sinceTokens int64
	growing                    chan struct{} // closed when the grow under way ends
	gone                       bool
}

func (s *usageSlice) fits(tokens int64) bool {
	return s.holdKey != "" && s.requests-s.usedRequests >= 1 && s.tokens-s.usedTokens >= tokens
}

// room is the tokens op takes from s: op.Tokens when s has them; when op
// accepts less (MinTokens) and the slice was grown for it already (settle),
// what s has left, if that is at least the least op accepts. ok is false
// when s cannot serve op now.
func (s *usageSlice) room(op store.UsageOp, settle bool) (tokens int64, ok bool) {
	if s.fits(op.Tokens) {
		return op.Tokens, true
	}
	if least := leastTokens(op); settle && least < op.Tokens && s.fits(least) {
		return s.tokens - s.usedTokens, true
	}
	return 0, false
}

// usageSlices is every usage slice of this node.
type usageSlices struct {
	mu      sync.Mutex
	slices  map[usageSliceKey]*usageSlice
	retired []*usageSlice // replaced (their bucket ended) while calls held them
	store   *store.Store
	ledger  *Ledger
}

func newUsageSlices(st *store.Store, l *Ledger) *usageSlices {
	return &usageSlices{slices: map[usageSliceKey]*usageSlice{}, store: st, ledger: l}
}

// reserve serves op from its slice, growing the slice when it has too
// little; it returns the reservation as the relay reads it (the rate-limit
// decision counting this call) and the slice to settle with.
func (b *usageSlices) reserve(ctx context.Context, op store.UsageOp, userID int64) (store.UsageReservation, *usageSlice, error) {
	k := usageSliceKey{op.SubscriptionID, op.Model}
	fine := planlimit.BucketStart(op.Now, planlimit.FineBucket)
	for grows := 0; ; {
		b.mu.Lock()
		s := b.slices[k]
		if s != nil && s.holdKey != "" && s.bucket != fine && s.growing == nil {
			s.gone = true // its bucket is over: it goes back once its calls end
			b.retired = append(b.retired, s)
			s = nil
		}
		if s == nil {
			s = &usageSlice{key: k, userID: userID, bucket: fine, used: op.Now}
			b.slices[k] = s
		}
		// An open call takes less than it asked only once its own grow
		// could not give it more: the window (or the fair share) is short.
		if tokens, ok := s.room(op, grows > 0); ok {
			r := s.take(op, tokens)
			b.mu.Unlock()
			return r, s, nil
		}
		if wait := s.growing; wait != nil { // another call grows it: wait for that
			s.waiting++
			b.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
			}
			b.mu.Lock()
			s.waiting--
			b.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return store.UsageReservation{}, nil, err
			}
			continue
		}
		if grows == maxGrowAttempts {
			b.mu.Unlock()
			return store.UsageReservation{}, nil, errBusy
		}
		grows++
		grow := store.UsageSliceOp{UsageOp: op, HoldKey: s.holdKey,
			Requests:    max(2*int64(s.calls+s.waiting+1), 2*s.rateRequests.perSecond(op.Now)*int64(sliceHorizon/time.Second)),
			SliceTokens: max(2*satAdd(s.heldTokens, op.Tokens), s.rateTokens.perSecond(op.Now)*int64(sliceHorizon/time.Second))}
		done := make(chan struct{})
		s.growing = done
		b.mu.Unlock()
		// A caller that leaves does not abort a grow: its grant must reach
		// the slice (or be given back), or it would count until the
		// process ends.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		g, err := b.store.GrowUsageSlice(gctx, grow)
		cancel()
		b.mu.Lock()
		s.growing = nil
		close(done)
		gone := s.gone
		if err == nil && !s.gone {
			if s.holdKey != g.HoldKey {
				// A new row (the first, or the old one was given back by
				// the janitor): what the old one counted is not this one's.
				s.requests, s.tokens, s.usedRequests, s.usedTokens = 0, 0, int64(s.calls), s.heldTokens
			}
			s.holdKey, s.bucket = g.HoldKey, g.BucketStart
			s.requests, s.tokens = satAdd(s.requests, g.Requests), satAdd(s.tokens, g.Tokens)
			s.decision, s.leastTokens, s.sinceRequests, s.sinceTokens = g.Decision, g.LeastTokens, 0, 0
		}
		if err != nil && errors.Is(err, store.ErrUsageLimit) && !s.gone {
			// The window has no more: an open call takes what the slice
			// still holds, when that is enough for it.
			if tokens, ok := s.room(op, true); ok {
				r := s.take(op, tokens)
				b.mu.Unlock()
				return r, s, nil
			}
		}
		b.mu.Unlock()
		if err == nil && gone { // dropped meanwhile (lease lost): give the grant back
			b.ledger.Settle(store.SettleOp{UserID: s.userID, Usage: &store.UsageSettle{HoldKey: g.HoldKey, Slice: true, Release: true,
				SubscriptionID: s.key.subscription, Model: s.key.model, BucketStart: g.BucketStart}})
		}
		if err != nil {
			return store.UsageReservation{}, nil, err
		}
	}
}

// take counts one call of op holding tokens in s (s fits it); b.mu is
// held.
func (s *usageSlice) take(op store.UsageOp, tokens int64) store.UsageReservation {
	s.usedRequests++
	s.usedTokens = satAdd(s.usedTokens, tokens)
	s.heldTokens = satAdd(s.heldTokens, tokens)
	s.calls++
	s.used = op.Now
	s.sinceRequests++
	s.sinceTokens = satAdd(s.sinceTokens, tokens)
	return store.UsageReservation{Key: s.holdKey, SubscriptionID: s.key.subscription, Model: s.key.model,
		BucketStart: s.bucket, Tokens: tokens, Decision: s.decisionNow()}
}

// decisionNow is the last grant's decision with the uses since counted
// (the grant's counted its least call already).
func (s *usageSlice) decisionNow() planlimit.Decision {
	d := s.decision
	adjust := func(st *planlimit.Status, extra int64) *planlimit.Status {
		if st == nil {
			return nil
		}
		c := *st
		c.Used = min(satAdd(c.Used, max(extra, 0)), c.Limit)
		c.Remaining = max(c.Limit-c.Used, 0)
		return &c
	}
	d.Requests = adjust(d.Requests, s.sinceRequests-1)
	d.Tokens = adjust(d.Tokens, s.sinceTokens-s.leastTokens)
	return d
}

// settled replaces a call's estimate by its real count.
func (b *usageSlices) settled(s *usageSlice, estimate, real int64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.calls--
	s.heldTokens -= estimate
	s.usedTokens = satAdd(s.usedTokens-estimate, real)
	s.rateRequests.add(now, 1)
	s.rateTokens.add(now, real)
	s.used = now
}

// released gives a call's use back to its slice: it billed nothing.
func (b *usageSlices) released(s *usageSlice, estimate int64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.calls--
	s.heldTokens -= estimate
	s.usedTokens -= estimate
	s.usedRequests--
	s.used = now
}

// giveBack ends the slices no call holds, idle since cutoff or of a fine
// bucket that is over, and returns the settlements that give them back.
func (b *usageSlices) giveBack(cutoff time.Time) []store.SettleOp {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ops []store.SettleOp
	end := func(s *usageSlice) {
		s.gone = true
		if s.holdKey != "" {
			ops = append(ops, store.SettleOp{UserID: s.userID, Usage: &store.UsageSettle{HoldKey: s.holdKey, Slice: true, Release: true,
				SubscriptionID: s.key.subscription, Model: s.key.model, BucketStart: s.bucket}})
		}
	}
	kept := b.retired[:0]
	for _, s := range b.retired {
		if s.calls > 0 {
			kept = append(kept, s)
			continue
		}
		end(s)
	}
	b.retired = kept
	for k, s := range b.slices {
		stale := s.holdKey != "" && s.bucket != planlimit.BucketStart(cutoff.Add(sliceIdle), planlimit.FineBucket)
		if s.calls > 0 || s.waiting > 0 || s.growing != nil || (s.used.After(cutoff) && !stale) {
			continue
		}
		delete(b.slices, k)
		end(s)
	}
	return ops
}

// drop forgets every slice: their lease was released elsewhere.
func (b *usageSlices) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slices {
		s.gone = true
	}
	clear(b.slices)
	b.retired = nil
}
