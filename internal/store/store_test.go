package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// database is one fresh database of an engine; open may be called several
// times to get several handles on it, like nodes sharing one database.
type database struct {
	dsn, sqlitePath string
}

func (d database) open(t *testing.T, nodeID int) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{DSN: d.dsn, SQLitePath: d.sqlitePath, NodeID: nodeID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachEngine runs f on SQLite and on every server engine configured.
func eachEngine(t *testing.T, f func(t *testing.T, db database)) {
	storetest.EachEngine(t, func(t *testing.T, dsn, sqlitePath string) { f(t, database{dsn, sqlitePath}) })
}

func newUser(name string) *store.User {
	return &store.User{Username: name, PasswordHash: "x", Role: 1, Status: 1, Group: "default", AffCode: name}
}

func TestIDsCarryTheNodeResidue(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		for _, node := range []int{0, 7, 49} {
			s := db.open(t, node)
			u := newUser(fmt.Sprintf("node%d", node))
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			if u.ID%50 != int64(node) || u.ID <= 0 {
				t.Fatalf("node %d created id %d", node, u.ID)
			}
		}
		if _, err := store.Open(ctx, store.Options{DSN: db.dsn, SQLitePath: db.sqlitePath, NodeID: 50}); err == nil {
			t.Fatal("node id 50 accepted")
		}
	})
}

// Two handles on one database stand for two stateless nodes: their
// concurrent inserts must never share an id.
func TestConcurrentInsertsFromTwoNodesGetDistinctIDs(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		a, b := db.open(t, 0), db.open(t, 0)
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int64]bool{}
		for i := range 40 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				u := newUser(fmt.Sprintf("user%02d", i))
				if err := s.CreateUser(ctx, u); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if seen[u.ID] {
					t.Errorf("id %d handed out twice", u.ID)
				}
				seen[u.ID] = true
			})
		}
		wg.Wait()
		if len(seen) != 40 {
			t.Fatalf("%d distinct ids, want 40", len(seen))
		}
	})
}

func TestQuotaChangesAreAtomic(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("payer")
		u.Quota = 30
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		for range 60 {
			wg.Go(func() {
				err := s.AddUserQuota(ctx, u.ID, -1, nil)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrConflict):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok.Load() != 30 || refused.Load() != 30 || got.Quota != 0 {
			t.Fatalf("deducted %d, refused %d, balance %d; want 30, 30, 0", ok.Load(), refused.Load(), got.Quota)
		}
		if err := s.AddUserQuota(ctx, 987654321, 5, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown user: %v", err)
		}
	})
}

func TestDuplicateKeepsTheDatabaseText(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		if err := s.CreateUser(ctx, newUser("twin")); err != nil {
			t.Fatal(err)
		}
		err := s.CreateUser(ctx, newUser("twin"))
		var dup *store.DuplicateError
		if !errors.Is(err, store.ErrDuplicate) || !errors.As(err, &dup) || dup.Error() == "" {
			t.Fatalf("second insert: %v", err)
		}
		// Names compare by bytes on every engine (MySQL gets a binary collation).
		if err := s.CreateUser(ctx, newUser("Twin")); err != nil {
			t.Fatalf("case-different username refused: %v", err)
		}
		if _, err := s.UserByID(ctx, 42); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
	})
}

// The change hook is the cluster outbox seam: it runs inside the change's
// transaction, so its failure undoes the change.
func TestChangeHookRunsInTheTransaction(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		var changes []store.Change
		fail := false
		s.SetChangeHook(func(tx *store.Tx, c store.Change) error {
			if fail {
				return errors.New("outbox down")
			}
			changes = append(changes, c)
			return nil
		})
		u := newUser("hooked")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0] != (store.Change{Table: "users", Op: "INSERT", ID: u.ID}) {
			t.Fatalf("changes = %+v", changes)
		}
		fail = true
		if err := s.AddUserQuota(ctx, u.ID, 100, nil); err == nil {
			t.Fatal("change committed although its event could not be recorded")
		}
		got, _ := s.UserByID(ctx, u.ID)
		if got.Quota != 0 {
			t.Fatalf("quota = %d after a rolled-back change", got.Quota)
		}
	})
}
func TestMigrationsRunOnceAndSeed(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		db.open(t, 0)
		s := db.open(t, 0) // the second start finds nothing to do
		prices, err := s.GroupPrices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(prices) != 3 {
			t.Fatalf("seeded group prices = %d, want default, vip, svip", len(prices))
		}
	})
}
