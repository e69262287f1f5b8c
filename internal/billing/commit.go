package billing

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// Bounds of a settlement that keeps failing. It is retried alone
// maxSettleAttempts times, waiting firstRetryDelay, then twice as long each
// time (about 4 s in all), and then parked as a dead letter.
const (
	maxSettleAttempts = 5
	firstRetryDelay   = 250 * time.Millisecond
	// maxRetryDelay spaces the attempts to park a settlement while the
	// database refuses even that.
	maxRetryDelay = 30 * time.Second
	// retriesPerRound and isolationBudget bound the transactions one round
	// of the ledger loop spends on failing settlements, so reservations
	// never wait long behind them.
	retriesPerRound = 32
	isolationBudget = 32
	// commitTimeout bounds one transaction.
	commitTimeout = 10 * time.Second
)

// failedSettle is a settlement waiting for its next attempt.
type failedSettle struct {
	op       store.SettleOp
	attempts int
	err      error
	due      time.Time
}

// commit applies one batch and answers its reservations. It returns the
// releases of reservations whose callers gave up, for the next batch.
//
// When the batch fails, which operation broke it is unknown: the
// reservations are committed again on their own, so a bad settlement never
// fails them, and the settlements are isolated (isolate).
func (l *Ledger) commit(reserves []*pendingReserve, settles []store.SettleOp) []store.SettleOp {
	reserves = l.mergeGrows(reserves)
	ops := make([]store.ReserveOp, len(reserves))
	for i, p := range reserves {
		ops[i] = p.op
	}
	results, err := l.apply(ops, settles)
	if err != nil && len(settles) > 0 {
		l.log.Warn("billing batch failed; committing its reservations and settlements apart",
			"reservations", len(reserves), "settlements", len(settles), "err", err)
		batchErr := err
		results, err = nil, nil
		if len(ops) > 0 {
			results, err = l.apply(ops, nil)
		}
		budget := isolationBudget
		if len(ops) == 0 || err == nil {
			l.isolate(settles, batchErr, &budget)
		} else {
			l.isolate(settles, batchErr, new(int)) // the database is failing: do not spend transactions
		}
	}
	if err != nil {
		l.log.Error("billing batch failed", "reservations", len(reserves), "err", err)
		for _, p := range reserves {
			l.answer(p, store.ReserveResult{Err: err})
		}
		return nil
	}
	var releases []store.SettleOp
	for i, p := range reserves {
		if release, ok := l.answer(p, results[i]); ok {
			releases = append(releases, release)
		}
	}
	return releases
}

// apply runs one transaction and keeps the local book in step.
func (l *Ledger) apply(reserves []store.ReserveOp, settles []store.SettleOp) ([]store.ReserveResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	start := time.Now()
	results, err := l.store.ApplyBilling(ctx, reserves, settles)
	if f := l.onCommit.Load(); f != nil {
		(*f)(time.Since(start))
	}
	if err == nil {
		l.settled.Add(int64(len(settles)))
	}
	if err == nil && l.book != nil {
		l.book.committed(settles)
	}
	if err == nil && l.slices != nil {
		l.slices.committed(settles)
	}
	return results, err
}

// answer hands a result to its caller. When the caller has already given
// up, it returns the release of what was held instead, for the next batch.
func (l *Ledger) answer(p *pendingReserve, r store.ReserveResult) (store.SettleOp, bool) {
	if p.waiters != nil { // a slice's grow: what it got stays in the slice
		return l.answerGrow(p, r)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.gaveUp {
		p.result <- r
		return store.SettleOp{}, false
	}
	return release(p.op, r), r.Err == nil && r.Held > 0
}

// isolate commits the good settlements of a failed batch by halving it: one
// bad settlement among n costs about 2·log2(n) small transactions. Each
// settlement that fails alone, and every part left when the budget of
// transactions is spent, goes to the retry list.
func (l *Ledger) isolate(settles []store.SettleOp, err error, budget *int) {
	if len(settles) == 1 || *budget <= 0 {
		for _, op := range settles {
			l.retryLater(&failedSettle{op: op}, err)
		}
		return
	}
	half := len(settles) / 2
	for _, part := range [][]store.SettleOp{settles[:half], settles[half:]} {
		*budget--
		if _, err := l.apply(nil, part); err != nil {
			if databaseDown(err) {
				*budget = 0
			}
			l.isolate(part, err, budget)
		}
	}
}

// databaseDown tells a database that does not answer from one that refused
// an operation: waiting on it again would only hold the ledger up.
func databaseDown(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn)
}

// retryLater counts a failed attempt of f and schedules the next one, or
// parks f when it has had its attempts.
func (l *Ledger) retryLater(f *failedSettle, err error) {
	f.attempts++
	f.err = err
	if f.attempts >= maxSettleAttempts && l.park(f) {
		return
	}
	delay := firstRetryDelay << min(f.attempts-1, 16)
	f.due = time.Now().Add(min(delay, maxRetryDelay))
	l.failed = append(l.failed, f)
}

// retryDue retries the settlements whose time has come, each alone.
func (l *Ledger) retryDue() {
	now := time.Now()
	var due []*failedSettle
	kept := l.failed[:0]
	for _, f := range l.failed {
		if len(due) < retriesPerRound && !f.due.After(now) {
			due = append(due, f)
		} else {
			kept = append(kept, f)
		}
	}
	l.failed = kept
	for i, f := range due {
		_, err := l.apply(nil, []store.SettleOp{f.op})
		if err == nil {
			continue
		}
		l.retryLater(f, err)
		if databaseDown(err) {
			// The rest wait for the next round, their attempts uncounted.
			for _, rest := range due[i+1:] {
				rest.due = time.Now().Add(firstRetryDelay)
				l.failed = append(l.failed, rest)
			}
			break
		}
	}
}

// nextRetry is when the earliest failed settlement is due (ok false when
// none waits).
func (l *Ledger) nextRetry() (time.Duration, bool) {
	if len(l.failed) == 0 {
		return 0, false
	}
	next := l.failed[0].due
	for _, f := range l.failed[1:] {
		if f.due.Before(next) {
			next = f.due
		}
	}
	return max(time.Until(next), time.Millisecond), true
}

// park stores f as a dead letter (its money was not charged, and its hold
// is given back), reporting success. A settlement is never dropped: one
// that cannot even be parked stays in the retry list.
func (l *Ledger) park(f *failedSettle) bool {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	id, err := l.store.ParkSettlement(ctx, f.op, f.attempts, f.err.Error())
	if err != nil {
		l.log.Error("settlement failed and could not be parked; kept for retry", "user", f.op.UserID,
			"cost", f.op.Cost, "held", f.op.Held, "attempts", f.attempts, "err", f.err, "park_err", err)
		return false
	}
	if l.book != nil {
		l.book.parked(f.op)
	}
	if l.slices != nil {
		l.slices.parked(f.op)
	}
	l.parked.Add(1)
	l.log.Error("settlement parked as a dead letter", "dead_letter", id, "user", f.op.UserID,
		"token", f.op.TokenID, "channel", f.op.ChannelID, "cost", f.op.Cost, "held", f.op.Held,
		"attempts", f.attempts, "err", f.err)
	return true
}

// Parked is how many settlements this ledger parked as dead letters since
// it started.
func (l *Ledger) Parked() int64 { return l.parked.Load() }

// settleClosed applies a settlement that arrived after Close: at once, and
// parked when it fails.
func (l *Ledger) settleClosed(op store.SettleOp) {
	if _, err := l.apply(nil, []store.SettleOp{op}); err != nil {
		l.parkOrLose(&failedSettle{op: op, attempts: 1, err: err})
	}
}

// parkOrLose parks f; when even that fails (the database is gone at
// shutdown) the whole settlement is logged, so it can be entered by hand.
func (l *Ledger) parkOrLose(f *failedSettle) {
	if l.park(f) {
		return
	}
	buf, _ := json.Marshal(f.op)
	l.log.Error("settlement lost: neither committed nor parked", "user", f.op.UserID, "cost", f.op.Cost,
		"err", f.err, "settlement", string(buf))
}

// drain commits everything still queued at Close. Settlements that still
// fail get one more attempt each and are then parked, whatever their count
// of attempts: after Close nobody would retry them.
func (l *Ledger) drain(settles []store.SettleOp) {
	for {
		select {
		case p := <-l.reserves:
			if p.slice != nil {
				p.result <- store.ReserveResult{Err: ErrClosed}
			} else {
				l.answer(p, store.ReserveResult{Err: ErrClosed})
			}
			continue
		default:
		}
		break
	}
	settles = append(settles, l.settles.take(maxQueuedSettles)...)
	settles = append(settles, l.giveBackSlices(time.Now().Add(time.Hour))...)
	for len(settles) > 0 {
		batch := settles[:min(len(settles), l.cfg.MaxBatch)]
		settles = append(l.commit(nil, batch), settles[len(batch):]...)
	}
	failed := l.failed
	l.failed = nil
	for _, f := range failed {
		_, err := l.apply(nil, []store.SettleOp{f.op})
		if err == nil {
			continue
		}
		f.attempts++
		f.err = err
		l.parkOrLose(f)
	}
}
