package billing

import (
	"context"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
)

// usageBook keeps plan usage counters in memory when this process is the
// only writer of its database (SQLite), as localBook does balances: a
// reservation is decided and held in memory, costing no database write,
// and only each call's real use is written, in the ledger's group commit
// (store.UsageSettle without a hold). The counters of a subscription and
// model are read from the database once, before their first decision;
// after that the memory is the truth: the database plus the uses queued
// for commit plus the holds of calls in flight. A crash loses the holds
// with the process (nothing to give back) and at most the uses of the last
// commit interval, in the user's favour, as for balances.
type usageBook struct {
	mu     sync.Mutex
	models map[usageKey]*modelUsage
	totals map[int64]*int64 // subscription → lifetime tokens
}

type usageKey struct {
	subscriptionID int64
	model          string
}

// modelUsage is the buckets of one subscription's use of one model, oldest
// first, both widths mixed (planlimit.Tally picks each window's).
type modelUsage struct {
	buckets []planlimit.Bucket
	used    time.Time // the last reservation: idle entries are forgotten
	open    int       // reservations not settled or released yet
}

func newUsageBook() *usageBook {
	return &usageBook{models: map[usageKey]*modelUsage{}, totals: map[int64]*int64{}}
}

// reserve decides op in memory and, when it fits, counts one request and
// op.Tokens at op.Now. The first decision for a subscription and model
// reads its counters from the database.
func (b *usageBook) reserve(ctx context.Context, st *store.Store, op store.UsageOp) (store.UsageReservation, error) {
	k := usageKey{op.SubscriptionID, op.Model}
	b.mu.Lock()
	if b.models[k] == nil || b.totals[op.SubscriptionID] == nil {
		b.mu.Unlock()
		counts, err := st.UsageCountsOf(ctx, op.SubscriptionID, op.Model, op.Now)
		if err != nil {
			return store.UsageReservation{}, err
		}
		b.mu.Lock()
		// A load that raced another one keeps the first: after it, memory
		// has counted uses the database may not have yet.
		if b.models[k] == nil {
			b.models[k] = &modelUsage{buckets: counts.Buckets}
		}
		if b.totals[op.SubscriptionID] == nil {
			b.totals[op.SubscriptionID] = &counts.LifetimeTokens
		}
	}
	defer b.mu.Unlock()
	m, life := b.models[k], b.totals[op.SubscriptionID]
	m.prune(op.Now)
	u := planlimit.Tally(op.Rule, m.buckets, op.Now)
	u.LifetimeTokens = *life
	tokens := planlimit.Fit(op.Rule, u, leastTokens(op), op.Tokens)
	d := planlimit.Check(op.Rule, u, tokens, op.Now)
	if !d.Fits {
		return store.UsageReservation{}, &store.UsageLimitError{Limit: d.Binding}
	}
	fine := planlimit.BucketStart(op.Now, planlimit.FineBucket)
	m.add(fine, 1, tokens)
	*life = clampCount(*life + tokens)
	m.used, m.open = op.Now, m.open+1
	return store.UsageReservation{SubscriptionID: op.SubscriptionID, Model: op.Model, BucketStart: fine,
		Tokens: tokens, Decision: d}, nil
}

// leastTokens is the fewest tokens op accepts (store.UsageOp.MinTokens).
func leastTokens(op store.UsageOp) int64 {
	if op.MinTokens > 0 {
		return min(op.MinTokens, op.Tokens)
	}
	return op.Tokens
}

// settle replaces reservation r's estimate by the real count; release
// gives r back whole.
func (b *usageBook) settle(r store.UsageReservation, realTokens int64) {
	b.close(r, 0, realTokens-r.Tokens)
}

func (b *usageBook) release(r store.UsageReservation) { b.close(r, -1, -r.Tokens) }

func (b *usageBook) close(r store.UsageReservation, requests, tokens int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.models[usageKey{r.SubscriptionID, r.Model}]; m != nil {
		m.add(r.BucketStart, requests, tokens)
		m.open--
	}
	if life := b.totals[r.SubscriptionID]; life != nil {
		*life = clampCount(*life + tokens)
	}
}

// changed counts the plan usage that peers' events added to the database
// (store.Change.RemoteUsage) in the counters the book holds; counters it
// does not hold read it with the database when they are loaded.
func (b *usageBook) changed(changes []store.Change) {
	for _, c := range changes {
		sub, model, fine, requests, tokens, ok := c.RemoteUsage()
		if !ok {
			continue
		}
		b.mu.Lock()
		if m := b.models[usageKey{sub, model}]; m != nil {
			m.add(fine, requests, tokens)
		}
		if life := b.totals[sub]; life != nil {
			*life = clampCount(*life + tokens)
		}
		b.mu.Unlock()
	}
}

// forget drops the counters of subscriptions and models that had no
// reservation since idle ago and none open, so the book holds only what is
// in use; they are read again when used. By then every use they counted
// was committed long since (or parked as a dead letter, which the database
// then lacks: a reload counts it only when it is replayed).
func (b *usageBook) forget(now time.Time, idle time.Duration) (n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live := map[int64]bool{}
	for k, m := range b.models {
		if m.open <= 0 && now.Sub(m.used) > idle {
			delete(b.models, k)
			n++
			continue
		}
		live[k.subscriptionID] = true
	}
	for id := range b.totals {
		if !live[id] {
			delete(b.totals, id)
		}
	}
	return n
}

// add counts requests and tokens (either may be negative) in the fine
// bucket starting at fine and in the coarse bucket holding it, creating
// them when they are missing and the change adds.
func (m *modelUsage) add(fine, requests, tokens int64) {
	coarse := planlimit.BucketStart(time.Unix(fine, 0), planlimit.CoarseBucket)
	m.addTo(planlimit.FineBucket, fine, requests, tokens)
	m.addTo(planlimit.CoarseBucket, coarse, requests, tokens)
}

func (m *modelUsage) addTo(width time.Duration, start, requests, tokens int64) {
	for i := len(m.buckets) - 1; i >= 0; i-- { // the newest buckets are at the end
		b := &m.buckets[i]
		if b.Width == width && b.Start == start {
			b.Requests, b.Tokens = clampCount(b.Requests+requests), clampCount(b.Tokens+tokens)
			return
		}
		if b.Start < start-int64(planlimit.CoarseBucket/time.Second) {
			break // older than any bucket of this use
		}
	}
	if requests < 0 || tokens < 0 {
		return // pruned since the reservation: it counts in no window any more
	}
	nb := planlimit.Bucket{Width: width, Start: start, Requests: clampCount(requests), Tokens: clampCount(tokens)}
	i := len(m.buckets)
	for i > 0 && m.buckets[i-1].Start > start {
		i--
	}
	m.buckets = append(m.buckets, planlimit.Bucket{})
	copy(m.buckets[i+1:], m.buckets[i:])
	m.buckets[i] = nb
}

// prune drops the buckets no window counts any more at now.
func (m *modelUsage) prune(now time.Time) {
	before := planlimit.PruneBefore(now)
	i := 0
	for i < len(m.buckets) && m.buckets[i].Start < before {
		i++
	}
	if i > 0 {
		m.buckets = append(m.buckets[:0], m.buckets[i:]...)
	}
}

// clampCount keeps a counter within 0..planlimit.MaxAmount, as the
// database's clamped additions do.
func clampCount(n int64) int64 { return min(max(n, 0), planlimit.MaxAmount) }
