package billing_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

type fixture struct {
	dsn    string // of the database, "" for SQLite
	path   string // of the SQLite file
	eng    string
	st     *store.Store
	ledger *billing.Ledger
	local  bool
	user   store.User
	token  store.Token
}

// mode is one way to run the ledger: over an engine, with holds written to
// the database (shared), kept in memory (local, SQLite only), or held from
// balance slices (sliced, as nodes sharing a server database do).
type mode struct {
	eng    storetest.Engine
	local  bool
	slices bool
}

func setup(t *testing.T, m mode, quota, tokenQuota int64, limited bool) *fixture {
	t.Helper()
	ctx := context.Background()
	dsn, path := m.eng.FreshDSN(t), filepath.Join(t.TempDir(), "b.db")
	st, err := store.Open(ctx, store.Options{DSN: dsn, SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{dsn: dsn, path: path, eng: m.eng.Name, st: st, local: m.local, ledger: billing.New(st, billing.Config{Local: m.local, Slices: m.slices})}
	st.OnCommit(f.ledger.Changed)
	t.Cleanup(func() { f.ledger.Close(context.Background()) })
	f.user = store.User{Username: "payer", PasswordHash: "x", Role: 1, Status: 1, Group: "default", AffCode: "aff", Quota: quota}
	if err := st.CreateUser(ctx, &f.user); err != nil {
		t.Fatal(err)
	}
	f.token = store.Token{UserID: f.user.ID, Name: "k", KeyHash: "h", KeyPrefix: "a", KeySuffix: "b", Status: 1,
		ExpiredTime: -1, RemainQuota: tokenQuota, UnlimitedQuota: !limited}
	if err := st.CreateToken(ctx, &f.token); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) op(amount int64) store.ReserveOp {
	return store.ReserveOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: !f.token.UnlimitedQuota, Amount: amount}
}

func (f *fixture) balances(t *testing.T) (user, token int64) {
	t.Helper()
	if err := f.ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	u, err := f.st.UserByID(context.Background(), f.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := f.st.UserToken(context.Background(), f.user.ID, f.token.ID)
	if err != nil {
		t.Fatal(err)
	}
	return u.Quota, tk.RemainQuota
}

func each(t *testing.T, f func(t *testing.T, m mode)) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) { f(t, mode{eng: eng}) })
		if eng.Name == "sqlite" {
			t.Run("sqlite-local", func(t *testing.T) { f(t, mode{eng: eng, local: true}) })
		}
		t.Run(eng.Name+"-sliced", func(t *testing.T) { f(t, mode{eng: eng, slices: true}) })
	}
}

// Reservations are capped by what is available, refused at zero, and a
// settlement returns the difference to the exact cost.
func TestReserveSettleRelease(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 100, 0, false)
		ctx := context.Background()
		hold, err := f.ledger.Reserve(ctx, f.op(60))
		if err != nil || hold.Amount != 60 {
			t.Fatalf("reserve 60 of 100: held %d, %v", hold.Amount, err)
		}
		hold2, err := f.ledger.Reserve(ctx, f.op(60))
		if err != nil || hold2.Amount != 40 {
			t.Fatalf("reserve 60 of 40 left: held %d, %v (want capped at 40)", hold2.Amount, err)
		}
		if _, err := f.ledger.Reserve(ctx, f.op(1)); !errors.Is(err, store.ErrUserQuota) {
			t.Fatalf("reserve at zero: %v", err)
		}
		f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold.Amount, Cost: 25,
			ReservationID: hold.ReservationID, Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 25}})
		f.ledger.SettleHold(hold2, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold2.Amount, ReservationID: hold2.ReservationID}) // release
		if user, _ := f.balances(t); user != 75 {
			t.Fatalf("balance after cost 25 = %d, want 75", user)
		}
		u, _ := f.st.UserByID(ctx, f.user.ID)
		if u.UsedQuota != 25 || u.RequestCount != 1 {
			t.Fatalf("used %d, requests %d", u.UsedQuota, u.RequestCount)
		}
		if n, _ := f.st.CountUserLogs(ctx, f.user.ID, store.LogConsume); n != 1 {
			t.Fatalf("consume logs = %d", n)
		}
	})
}

// A limited key is capped by its own remaining quota and becomes exhausted
// (status 4) when a settlement takes it to zero.
func TestLimitedTokenIsCappedAndExhausted(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 1000, 30, true)
		ctx := context.Background()
		hold, err := f.ledger.Reserve(ctx, f.op(50))
		if err != nil || hold.Amount != 30 {
			t.Fatalf("held %d, %v; want 30 (the key's limit)", hold.Amount, err)
		}
		if _, err := f.ledger.Reserve(ctx, f.op(1)); !errors.Is(err, store.ErrTokenQuota) {
			t.Fatalf("second reserve: %v", err)
		}
		f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, TokenLimited: true, Held: hold.Amount, Cost: 30,
			ReservationID: hold.ReservationID,
			Log:           &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 30}})
		user, token := f.balances(t)
		tk, _ := f.st.UserToken(ctx, f.user.ID, f.token.ID)
		if user != 970 || token != 0 || tk.Status != 4 || tk.UsedQuota != 30 {
			t.Fatalf("user %d, token %d, status %d, used %d", user, token, tk.Status, tk.UsedQuota)
		}
	})
}

// Many concurrent reservations never hold more than the balance.
func TestConcurrentReservationsNeverOverspend(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 100, 0, false)
		var total atomic.Int64
		var wg sync.WaitGroup
		for range 60 {
			wg.Go(func() {
				hold, err := f.ledger.Reserve(context.Background(), f.op(7))
				if err == nil {
					total.Add(hold.Amount)
				} else if !errors.Is(err, store.ErrUserQuota) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if total.Load() != 100 {
			t.Fatalf("held %d in total, want exactly the balance 100", total.Load())
		}
		if user, _ := f.balances(t); user != 0 && !f.local { // local holds never reach the database
			t.Fatalf("balance %d after holding everything", user)
		}
	})
}

// Close commits settlements still queued: none is lost at shutdown.
func TestCloseFlushesSettlements(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 0, 0, false)
		for range 200 {
			f.ledger.Settle(store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Cost: 1,
				Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 1}})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.ledger.Close(ctx); err != nil {
			t.Fatal(err)
		}
		u, _ := f.st.UserByID(ctx, f.user.ID)
		n, _ := f.st.CountUserLogs(ctx, f.user.ID, store.LogConsume)
		if u.Quota != -200 || u.UsedQuota != 200 || n != 200 {
			t.Fatalf("after close: quota %d, used %d, logs %d", u.Quota, u.UsedQuota, n)
		}
		if _, err := f.ledger.Reserve(ctx, f.op(1)); !errors.Is(err, billing.ErrClosed) {
			t.Fatalf("reserve after close: %v", err)
		}
	})
}

// A caller that gives up while its reservation is being committed does not
// keep the money: the ledger releases it.
func TestAbandonedReservationIsReleased(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		f := setup(t, m, 1000, 0, false)
		for range 50 {
			ctx, cancel := context.WithCancel(context.Background())
			go cancel()
			if hold, err := f.ledger.Reserve(ctx, f.op(10)); err == nil {
				// Not abandoned after all: this caller releases, as the relay does.
				f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold.Amount, ReservationID: hold.ReservationID})
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			if user, _ := f.balances(t); user == 1000 {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("balance %d: abandoned reservations kept money", user)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// A hold whose process died is given back by the janitor exactly once: a
// late settlement of the same hold returns nothing more.
func TestStaleReservationsAreReleasedOnce(t *testing.T) {
	each(t, func(t *testing.T, m mode) {
		if m.local {
			t.Skip("local holds are never written, so a dead process leaves none")
		}
		f := setup(t, m, 100, 0, false)
		ctx := context.Background()
		hold, err := f.ledger.Reserve(ctx, f.op(70))
		if err != nil {
			t.Fatal(err)
		}
		n, err := f.st.ReleaseStaleReservations(ctx, time.Now().Unix()+1)
		if err != nil || n != 1 {
			t.Fatalf("released %d, %v", n, err)
		}
		if user, _ := f.balances(t); user != 100 {
			t.Fatalf("balance after release = %d, want 100", user)
		}
		// The call finishes after all: it pays its cost, and the hold is not
		// returned twice.
		f.ledger.SettleHold(hold, store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold.Amount, Cost: 20,
			ReservationID: hold.ReservationID, Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 20}})
		if user, _ := f.balances(t); user != 80 {
			t.Fatalf("balance after the late settlement = %d, want 80", user)
		}
		if n, _ := f.st.ReleaseStaleReservations(ctx, time.Now().Unix()+1); n != 0 {
			t.Fatalf("released %d again", n)
		}
	})
}

// A local ledger sees a balance changed by someone else (a top-up) at its
// next hold, without double counting its own uncommitted costs.
func TestLocalLedgerSeesOutsideChanges(t *testing.T) {
	f := setup(t, mode{eng: storetest.Engines()[0], local: true}, 50, 0, false)
	ctx := context.Background()
	hold, err := f.ledger.Reserve(ctx, f.op(50))
	if err != nil || hold.Amount != 50 {
		t.Fatalf("hold %d, %v", hold.Amount, err)
	}
	if _, err := f.ledger.Reserve(ctx, f.op(1)); !errors.Is(err, store.ErrUserQuota) {
		t.Fatalf("everything held, yet: %v", err)
	}
	// Settle 30 of the 50 (still pending), then an admin credits 100.
	f.ledger.Settle(store.SettleOp{UserID: f.user.ID, TokenID: f.token.ID, Held: hold.Amount, Cost: 30,
		Log: &store.Log{UserID: f.user.ID, Type: store.LogConsume, Quota: 30}})
	if err := f.st.AddUserQuota(ctx, f.user.ID, 100, nil); err != nil {
		t.Fatal(err)
	}
	// 50 − 30 + 100 = 120 is available, whether or not the 30 committed yet.
	hold, err = f.ledger.Reserve(ctx, f.op(1000))
	if err != nil || hold.Amount != 120 {
		t.Fatalf("after the top-up held %d, %v; want 120", hold.Amount, err)
	}
	if user, _ := f.balances(t); user != 120 {
		t.Fatalf("database balance %d, want 120", user)
	}
}

// A backlog of settlements is committed batch after batch at once, not one
// batch per flush interval; a lone settlement waits for the interval.
func TestBacklogIsCommittedWithoutWaitingForTheInterval(t *testing.T) {
	eng := storetest.Engines()[0]
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "q.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := billing.New(st, billing.Config{FlushInterval: time.Hour, MaxBatch: 10})
	defer l.Close(ctx)
	u := store.User{Username: "payer", PasswordHash: "x", Role: 1, Status: 1, Group: "default", AffCode: "aff", Quota: 1000}
	if err := st.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	for range 95 {
		l.Settle(store.SettleOp{UserID: u.ID, Cost: 1, Log: &store.Log{UserID: u.ID, Type: store.LogConsume, Quota: 1}})
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Settled() < 90 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 95 settlements committed 5 s later, with batches of 10 and an hour's interval", l.Settled())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := l.Settled(); n != 90 {
		t.Fatalf("%d committed: the last 5 are less than a batch and wait for the interval", n)
	}
	if err := l.Flush(ctx); err != nil || l.Settled() != 95 {
		t.Fatalf("after Flush %d committed, %v", l.Settled(), err)
	}
}
