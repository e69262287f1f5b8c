package billing_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// fakeOwner owns every balance of the tests below: it grants from free,
// once per key, and can be down or lose its answers.
type fakeOwner struct {
	mu       sync.Mutex
	free     int64
	granted  int64 // given minus taken back
	lastKey  string
	lastGot  int64
	down     bool
	loseNext bool // apply the next call, then fail as a lost answer
	calls    int
}

func (o *fakeOwner) Local(int64) bool { return false }

func (o *fakeOwner) Grant(_ context.Context, op store.GrantOp) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.down {
		return 0, errors.New("connection refused")
	}
	if op.Key == o.lastKey {
		return o.lastGot, nil
	}
	got := op.Amount
	if got > 0 {
		if o.free < op.Min {
			return 0, store.ErrUserQuota
		}
		got = min(got, o.free)
	}
	o.free -= got
	o.granted += got
	o.lastKey, o.lastGot = op.Key, got
	if o.loseNext {
		o.loseNext = false
		return 0, errors.New("timeout")
	}
	return got, nil
}

func (o *fakeOwner) state() (free, granted int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.free, o.granted
}

func grantLedger(t *testing.T, o *fakeOwner) (*billing.Ledger, store.ReserveOp) {
	t.Helper()
	f := setup(t, mode{eng: storetest.Engines()[0], local: true}, 1_000_000, 0, false)
	l := billing.New(f.st, billing.Config{Local: true, Grants: o, NodeID: 2})
	f.st.OnCommit(l.Changed)
	t.Cleanup(func() { l.Close(context.Background()) })
	return l, store.ReserveOp{UserID: f.user.ID, TokenID: f.token.ID, Amount: 10, Min: 10}
}

// TestGrantsBoundParallelCalls: calls on a node that does not own the
// balance spend only what the owner granted, however many run at once.
func TestGrantsBoundParallelCalls(t *testing.T) {
	o := &fakeOwner{free: 300}
	l, op := grantLedger(t, o)
	var served atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := l.Reserve(context.Background(), op)
			if err != nil {
				if !errors.Is(err, store.ErrUserQuota) {
					t.Errorf("refusal: %v", err)
				}
				return
			}
			served.Add(1)
			l.SettleHold(h, store.SettleOp{UserID: op.UserID, TokenID: op.TokenID, Held: h.Amount, Cost: h.Amount})
		}()
	}
	wg.Wait()
	if served.Load() != 30 {
		t.Fatalf("%d calls served from 300 granted, want 30", served.Load())
	}
}

// TestGrantLostAnswerAndGiveBack: a grant whose answer was lost is asked
// again under its key before anything else (never granted twice); an
// owner that cannot be reached refuses calls with ErrOwnerUnavailable once
// the grant is spent; an idle grant goes back, leaving granted what was
// spent.
func TestGrantLostAnswerAndGiveBack(t *testing.T) {
	o := &fakeOwner{free: 1000, loseNext: true}
	l, op := grantLedger(t, o)
	if _, err := l.Reserve(context.Background(), op); !errors.Is(err, billing.ErrOwnerUnavailable) {
		t.Fatalf("lost answer: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // the back-off after a failure
	h, err := l.Reserve(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if _, granted := o.state(); granted != 20+20 { // the lost grow, then a new one
		t.Fatalf("granted %d after the lost answer, want 40", granted)
	}
	l.SettleHold(h, store.SettleOp{UserID: op.UserID, Held: h.Amount, Cost: 7})
	o.mu.Lock()
	o.down = true
	o.mu.Unlock()
	served := 0
	for {
		h, err := l.Reserve(context.Background(), op)
		if errors.Is(err, billing.ErrOwnerUnavailable) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		served++
		l.SettleHold(h, store.SettleOp{UserID: op.UserID, Held: h.Amount, Cost: 10})
	}
	if served != 3 { // 40 - 7 left: three calls of 10
		t.Fatalf("%d calls served from the grant with the owner down, want 3", served)
	}
	o.mu.Lock()
	o.down = false
	o.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, granted := o.state(); granted == 37 {
			break
		}
		if time.Now().After(deadline) {
			_, granted := o.state()
			t.Fatalf("granted %d after the give-back, want the 37 spent", granted)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
