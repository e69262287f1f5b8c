package billing_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// eachServer runs f on every server engine configured: balance slices are
// what nodes sharing one of them use.
func eachServer(t *testing.T, f func(t *testing.T, eng storetest.Engine)) {
	ran := false
	for _, eng := range storetest.Engines() {
		if eng.Name == "sqlite" {
			continue
		}
		ran = true
		t.Run(eng.Name, func(t *testing.T) { f(t, eng) })
	}
	if !ran {
		t.Skip("set MODELGATE_TEST_POSTGRES_DSN or MODELGATE_TEST_MYSQL_DSN: slices serve nodes sharing a server database")
	}
}

// node is a second process on f's database: its own store, lease and
// sliced ledger.
func (f *fixture) node(t *testing.T) (*store.Store, *billing.Ledger) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: f.dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.StartLease(ctx, "test node", time.Minute); err != nil {
		t.Fatal(err)
	}
	l := billing.New(st, billing.Config{Slices: true})
	t.Cleanup(func() { l.Close(context.Background()) })
	return st, l
}

// quota reads the user's balance straight from the database, without
// flushing anyone's ledger.
func (f *fixture) quota(t *testing.T) int64 {
	t.Helper()
	u, err := f.st.UserByID(context.Background(), f.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	return u.Quota
}

// Two nodes each holding and settling from their own slices of one balance
// never spend more than it; once both flushed, the balance is exactly the
// balance minus the costs, and what is left can be spent from either node
// down to less than one call.
func TestSlicesOfTwoNodesNeverOverspend(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 1000, 0, false)
		_, a := f.node(t)
		_, b := f.node(t)
		nodes := []*billing.Ledger{a, b}
		var spent atomic.Int64
		call := func(l *billing.Ledger) error {
			h, err := l.Reserve(context.Background(), f.op(9))
			if err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			cost := min(h.Amount, 7)
			spent.Add(cost)
			l.SettleHold(h, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Cost: cost,
				Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: cost}})
			return nil
		}
		flush := func() {
			for _, l := range nodes {
				if err := l.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				if err := call(nodes[i%2]); err != nil && !errors.Is(err, store.ErrUserQuota) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		flush()
		if got := f.quota(t); got != 1000-spent.Load() || got < 0 {
			t.Fatalf("balance %d after spending %d of 1000", got, spent.Load())
		}
		for i := 0; ; i++ {
			err := call(nodes[i%2])
			flush()
			if errors.Is(err, store.ErrUserQuota) {
				break
			}
			if err != nil || i > 200 {
				t.Fatalf("sequential call %d: %v", i, err)
			}
		}
		if got := f.quota(t); got != 1000-spent.Load() || got < 0 || got >= 9 {
			t.Fatalf("balance %d after spending %d of 1000: want exact, and less than a call's 9 left", got, spent.Load())
		}
	})
}

// A slice takes at most a fair share of what its calls do not need: with
// one node holding a slice, the other can still hold most of the balance;
// and a slice nobody uses goes back without a flush.
func TestSliceLeavesTheRestToOtherNodes(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 1_000_000, 0, false)
		_, a := f.node(t)
		_, b := f.node(t)
		ctx := context.Background()
		h, err := a.Reserve(ctx, f.op(10))
		if err != nil || h.Amount != 10 {
			t.Fatalf("node a: %d, %v", h.Amount, err)
		}
		leased := 1_000_000 - f.quota(t)
		if leased < 10 || leased > 100 {
			t.Fatalf("node a leased %d for a call of 10: want the call and headroom of the same order", leased)
		}
		hb, err := b.Reserve(ctx, f.op(900_000))
		if err != nil || hb.Amount < 900_000-leased {
			t.Fatalf("node b could hold %d (%v) of a balance of which node a leased %d", hb.Amount, err, leased)
		}
		b.SettleHold(hb, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID})
		a.SettleHold(h, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Cost: 4,
			Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 4}})
		// No flush: the idle slices go back on their own.
		deadline := time.Now().Add(10 * time.Second)
		for f.quota(t) != 1_000_000-4 {
			if time.Now().After(deadline) {
				t.Fatalf("balance %d 10 s after the last call, want %d: idle slices kept", f.quota(t), 1_000_000-4)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// A slice never leases a small balance away from the other nodes: the
// headroom is capped at a fair share of what is left.
func TestSliceOfASmallBalanceIsAFairShare(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 100, 0, false)
		_, a := f.node(t)
		_, b := f.node(t)
		ctx := context.Background()
		h, err := a.Reserve(ctx, f.op(20))
		if err != nil || h.Amount != 20 {
			t.Fatalf("node a: %d, %v", h.Amount, err)
		}
		// Two leases: a share is a quarter of the 80 left beyond the call.
		if leased := 100 - f.quota(t); leased != 20+80/4 {
			t.Fatalf("node a leased %d of 100 for a call of 20, want 40", leased)
		}
		hb, err := b.Reserve(ctx, f.op(60))
		if err != nil || hb.Amount != 60 {
			t.Fatalf("node b: %d, %v; want the 60 node a left", hb.Amount, err)
		}
	})
}

// A limited key is not exhausted while a slice still holds some of its
// quota: it becomes exhausted once the last of it is spent.
func TestLimitedKeyExhaustedOnlyWhenItsSliceIsSpent(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 1000, 30, true)
		_, a := f.node(t)
		ctx := context.Background()
		h, err := a.Reserve(ctx, f.op(30))
		if err != nil || h.Amount != 30 {
			t.Fatalf("hold %d, %v", h.Amount, err)
		}
		a.SettleHold(h, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Cost: 10,
			Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 10}})
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		tk, _ := f.st.UserToken(ctx, f.user.ID, f.token.ID)
		if tk.Status != 1 || tk.RemainQuota != 20 {
			t.Fatalf("after spending 10 of 30: status %d, remain %d", tk.Status, tk.RemainQuota)
		}
		h, err = a.Reserve(ctx, f.op(30))
		if err != nil || h.Amount != 20 {
			t.Fatalf("hold %d, %v; want the 20 left", h.Amount, err)
		}
		a.SettleHold(h, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Cost: 20,
			Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 20}})
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		tk, _ = f.st.UserToken(ctx, f.user.ID, f.token.ID)
		if tk.Status != 4 || tk.RemainQuota != 0 || f.quota(t) != 970 {
			t.Fatalf("after spending all 30: status %d, remain %d, user %d", tk.Status, tk.RemainQuota, f.quota(t))
		}
	})
}

// The slices of a process that stops settling (killed) come back when its
// lease expires, and its late settlements, if it was only stalled, charge
// the balance without returning anything twice.
func TestSlicesOfAnExpiredLeaseComeBackOnce(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 1000, 0, false)
		ctx := context.Background()
		st, err := store.Open(ctx, store.Options{DSN: f.dsn})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.StartLease(ctx, "stalling node", 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		a := billing.New(st, billing.Config{Slices: true})
		t.Cleanup(func() { a.Close(context.Background()) })
		h, err := a.Reserve(ctx, f.op(100))
		if err != nil {
			t.Fatal(err)
		}
		if f.quota(t) >= 900 {
			t.Fatalf("balance %d while a slice holds a call of 100", f.quota(t))
		}
		time.Sleep(400 * time.Millisecond)
		leases, holds, err := f.st.ReleaseExpiredLeases(ctx)
		if err != nil || leases != 1 || holds != 1 || f.quota(t) != 1000 {
			t.Fatalf("janitor: %d leases, %d holds, %v; balance %d", leases, holds, err, f.quota(t))
		}
		a.SettleHold(h, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Cost: 30,
			Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 30}})
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.quota(t); got != 970 {
			t.Fatalf("balance %d after the late settlement of 30, want 970", got)
		}
	})
}

// Plan usage slices of two nodes serve exactly a subscription's limit
// together, count each call's real tokens once both flushed, and give back
// what they held beyond it.
func TestUsageSlicesOfTwoNodesServeExactlyTheLimit(t *testing.T) {
	eachServer(t, func(t *testing.T, eng storetest.Engine) {
		f := setup(t, mode{eng: eng}, 0, 0, false)
		stA, a := f.node(t)
		stB, b := f.node(t)
		now := func() time.Time { return time.Date(2026, 11, 2, 10, 3, 0, 0, time.UTC) }
		plans := []*billing.Plans{billing.NewPlans(a, stA, false, now), billing.NewPlans(b, stB, false, now)}
		rule := planlimit.Rule{RequestPeriod: 10}
		var served atomic.Int64
		var wg sync.WaitGroup
		for i := range 30 {
			p := plans[i%2]
			wg.Go(func() {
				c := &billing.Call{UserID: f.user.ID, TokenID: f.token.ID, SubscriptionID: 99, Rule: rule, Model: "gpt-4o",
					PromptBound: 10, MaxTokens: 5, Choices: 1, Kind: billing.KindChat, Start: now()}
				ch, err := p.Reserve(context.Background(), c)
				if errors.Is(err, store.ErrUsageLimit) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				served.Add(1)
				time.Sleep(time.Millisecond)
				ch.Payer.Settle(c, &ch, billing.Outcome{ChannelID: 1, Usage: pricing.Usage{PromptTokens: 3, CompletionTokens: 4}})
			})
		}
		wg.Wait()
		for _, l := range []*billing.Ledger{a, b} {
			if err := l.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if served.Load() != 10 {
			t.Fatalf("served %d calls against request_period 10", served.Load())
		}
		u, err := f.st.UsageOf(context.Background(), 99, map[string]planlimit.Rule{"gpt-4o": rule}, now())
		if err != nil {
			t.Fatal(err)
		}
		if c := u.Models[0].Usage.Windows[planlimit.Period]; c.Requests != 10 || c.Tokens != 70 || u.LifetimeTokens != 70 {
			t.Fatalf("counted %d requests, %d tokens (%d lifetime); want the 10 calls' 10 and 70", c.Requests, c.Tokens, u.LifetimeTokens)
		}
	})
}
