package billing

import (
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// The in-memory counters keep what the database would: a settlement and a
// release change the buckets of their reservation, old buckets are pruned,
// idle entries without open reservations are forgotten.
func TestUsageBookBuckets(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 3, 0, 0, time.UTC)
	fine := planlimit.BucketStart(now, planlimit.FineBucket)
	m := &modelUsage{}
	m.add(fine, 1, 500)
	m.add(fine, 0, 70-500) // settled at 70
	m.add(fine, 1, 300)
	m.add(fine, -1, -300) // released
	rule := planlimit.Rule{RequestPeriod: 10, TokenMonth: 1000}
	u := planlimit.Tally(rule, m.buckets, now)
	if p, mo := u.Windows[planlimit.Period], u.Windows[planlimit.Month]; p.Requests != 1 || p.Tokens != 70 || mo.Requests != 1 || mo.Tokens != 70 {
		t.Fatalf("windows %+v", u.Windows)
	}
	if len(m.buckets) != 2 {
		t.Fatalf("%d buckets, want one of each width", len(m.buckets))
	}
	// A release of a bucket already pruned creates nothing.
	m.add(fine-int64(40*24*time.Hour/time.Second), -1, -10)
	if len(m.buckets) != 2 {
		t.Fatalf("a release created buckets: %+v", m.buckets)
	}
	// Pruning at a month and more later leaves nothing.
	m.prune(now.Add(planlimit.MonthLength + 2*planlimit.CoarseBucket))
	if len(m.buckets) != 0 {
		t.Fatalf("after a month: %+v", m.buckets)
	}

	b := newUsageBook()
	life := int64(5)
	b.models[usageKey{1, "a"}] = &modelUsage{used: now, open: 1}
	b.models[usageKey{2, "a"}] = &modelUsage{used: now}
	b.models[usageKey{3, "a"}] = &modelUsage{used: now.Add(-2 * time.Hour)}
	b.totals[1], b.totals[2], b.totals[3] = &life, &life, &life
	if n := b.forget(now.Add(90*time.Minute), time.Hour); n != 2 {
		t.Fatalf("forgot %d, want 2 (the open one stays)", n)
	}
	if b.models[usageKey{1, "a"}] == nil || b.totals[1] == nil || b.totals[2] != nil || b.totals[3] != nil {
		t.Errorf("after forget: models %v totals %v", b.models, b.totals)
	}
}
