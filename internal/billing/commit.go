package billing

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// commit applies one batch and answers its reservations. It returns the
// settlements for the next batch: those that could not be committed yet (a
// database hiccup delays settlements but never drops them) and the releases
// of reservations whose callers gave up.
func (l *Ledger) commit(reserves []*pendingReserve, settles []store.SettleOp) []store.SettleOp {
	ops := make([]store.ReserveOp, len(reserves))
	for i, p := range reserves {
		ops[i] = p.op
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results, err := l.store.ApplyBilling(ctx, ops, settles)
	if err == nil && l.book != nil {
		l.book.committed(settles)
	}
	if err != nil {
		l.log.Error("billing batch failed", "reservations", len(reserves), "settlements", len(settles), "err", err)
		for _, p := range reserves {
			l.answer(p, store.ReserveResult{Err: err})
		}
		// Retry the settlements on their own, so a poisoned one cannot
		// keep failing the reservations of every later batch.
		return l.retrySettles(settles)
	}
	var releases []store.SettleOp
	for i, p := range reserves {
		if release, ok := l.answer(p, results[i]); ok {
			releases = append(releases, release)
		}
	}
	return releases
}

// answer hands a result to its caller. When the caller has already given
// up, it returns the release of what was held instead, for the next batch.
func (l *Ledger) answer(p *pendingReserve, r store.ReserveResult) (store.SettleOp, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.gaveUp {
		p.result <- r
		return store.SettleOp{}, false
	}
	return release(p.op, r), r.Err == nil && r.Held > 0
}

// retrySettles commits settlements alone, then one by one; one that still
// fails after that is logged with its figures for manual reconciliation and
// kept for the next batch up to maxSettleAttempts.
func (l *Ledger) retrySettles(settles []store.SettleOp) []store.SettleOp {
	if len(settles) == 0 {
		return nil
	}
	if l.applySettles(settles) {
		return nil
	}
	var kept []store.SettleOp
	for _, op := range settles {
		if !l.applySettles([]store.SettleOp{op}) {
			kept = append(kept, op)
		}
	}
	return kept
}

// applySettles commits settlements in one transaction, reporting success.
func (l *Ledger) applySettles(settles []store.SettleOp) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := l.store.ApplyBilling(ctx, nil, settles)
	if err == nil && l.book != nil {
		l.book.committed(settles)
	}
	if err != nil {
		for _, op := range settles {
			l.log.Error("settlement not committed", "user", op.UserID, "token", op.TokenID,
				"channel", op.ChannelID, "held", op.Held, "cost", op.Cost, "err", err)
		}
		return false
	}
	return true
}

// drain commits everything still queued at Close: settlements are retried
// a few times with backoff before they are given up (and logged).
func (l *Ledger) drain(settles []store.SettleOp) {
	for {
		select {
		case op := <-l.settles:
			settles = append(settles, op)
			continue
		case p := <-l.reserves:
			l.answer(p, store.ReserveResult{Err: ErrClosed})
			continue
		default:
		}
		break
	}
	for attempt := 0; len(settles) > 0 && attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		settles = l.retrySettles(settles)
	}
}
