package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// BenchmarkConsoleTables seeds a gateway with 100,000 users and 1,000,000
// consume logs through the store (users 5,000 to a transaction, logs by
// InsertBatch as the billing ledger writes them), then times over HTTP the
// list routes the console's tables call, with the console's page size (20):
// the users page (GET /api/user/, /api/user/search: web/js/pages/users.js)
// and the logs (GET /api/log/ for admins, /api/log/self for a user's own:
// web/js/pages/logs.js). It is a benchmark, not a test: `go test ./...`
// does not run it, and -short skips it. docs/performance.md (Console
// tables) has the command and the figures.
func BenchmarkConsoleTables(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1,000,000 logs: skipped under -short")
	}
	const users, logs, models, days, batch = 100_000, 1_000_000, 20, 30, 5000
	e := apptest.New(b)
	root := e.Root()
	self, selfID := e.NewUser("load-self", 1)
	ctx := context.Background()
	st := e.App.Store
	start := time.Now()
	ids := make([]int64, users)
	for lo := 0; lo < users; lo += batch {
		err := st.InTx(ctx, func(tx *store.Tx) error {
			for i := lo; i < lo+batch && i < users; i++ {
				u := store.User{Username: fmt.Sprintf("load-%06d", i), PasswordHash: "x", AffCode: fmt.Sprintf("ld%06d", i),
					Email: fmt.Sprintf("load-%06d@example.com", i)}
				if err := tx.CreateUser(&u); err != nil {
					return err
				}
				ids[i] = u.ID
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d users in %s", users, time.Since(start).Round(time.Millisecond))
	now := time.Now().Unix()
	rng := rand.New(rand.NewPCG(1, 2))
	start = time.Now()
	rows := make([]store.Log, 0, batch)
	for i := 0; i < logs; i++ {
		// Every 100th log is load-self's, so its own list has 10,000 rows
		// among the million.
		id, name := selfID, "load-self"
		if i%100 != 0 {
			u := rng.IntN(users)
			id, name = ids[u], fmt.Sprintf("load-%06d", u)
		}
		rows = append(rows, store.Log{UserID: id, Username: name, Type: store.LogConsume,
			ModelName: fmt.Sprintf("model-%02d", rng.IntN(models)), CreatedAt: now - rng.Int64N(days*86400),
			Quota: rng.Int64N(5000), PromptTokens: rng.Int64N(2000), CompletionTokens: rng.Int64N(1000)})
		if len(rows) == batch || i == logs-1 {
			if err := st.InsertBatch(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	b.Logf("seeded %d consume logs in %s", logs, time.Since(start).Round(time.Millisecond))

	// The last pages come from the totals, as the console's pager computes
	// them; a check that the seed is what the figures claim.
	lastPage := func(c *apptest.Client, path string, want int64) int64 {
		r := c.OK("GET", path+"p=0&page_size=20", nil)
		if r.Total < want {
			b.Fatalf("%s: total %d, want at least %d", path, r.Total, want)
		}
		return (r.Total - 1) / 20
	}
	lastUsers := lastPage(root, "/api/user/?", users)
	deepLogs := lastPage(root, "/api/log/?", logs)
	deepSelf := lastPage(self, "/api/log/self?", logs/100)
	for _, r := range []struct {
		name string
		c    *apptest.Client
		path string
	}{
		{"users-first", root, "/api/user/?p=0&page_size=20"},
		{"users-search", root, "/api/user/search?keyword=load-04242&p=0&page_size=20"},
		{"users-search-none", root, "/api/user/search?keyword=nobody&p=0&page_size=20"},
		{"users-last", root, fmt.Sprintf("/api/user/?p=%d&page_size=20", lastUsers)},
		{"logs-first", root, "/api/log/?p=0&page_size=20"},
		{"logs-model", root, "/api/log/?model_name=model-07&p=0&page_size=20"},
		{"logs-username", root, "/api/log/?username=load-04242&p=0&page_size=20"},
		{"logs-type-time", root, fmt.Sprintf("/api/log/?type=2&start_timestamp=%d&end_timestamp=%d&p=0&page_size=20", now-7*86400, now)},
		{"logs-search", root, "/api/log/search?keyword=load-04242&p=0&page_size=20"},
		{"logs-deep", root, fmt.Sprintf("/api/log/?p=%d&page_size=20", deepLogs)},
		{"logs-self-first", self, "/api/log/self?p=0&page_size=20"},
		{"logs-self-deep", self, fmt.Sprintf("/api/log/self?p=%d&page_size=20", deepSelf)},
	} {
		b.Run(r.name, func(b *testing.B) {
			start := time.Now()
			n := 0
			for b.Loop() {
				r.c.OK("GET", r.path, nil)
				n++
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(n), "ms/call")
		})
	}
}
