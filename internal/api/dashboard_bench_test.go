package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// BenchmarkAdminDashboard seeds a gateway with consume logs over the last
// 30 UTC days (1,000,000 by default; MODELGATE_DASH_BENCH_LOGS sets
// another count), 1,000 users and 20 models, through the store as the
// billing ledger writes them (InsertLogs, which keeps the rollups), then
// times the three dashboard routes over HTTP. logs-scan is the same chart
// summed from the logs instead of the rollup, for comparison.
// docs/performance.md (Dashboard) has the command and the figures.
func BenchmarkAdminDashboard(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("MODELGATE_DASH_BENCH_LOGS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	const users, models, days, batch = 1000, 20, 30, 5000
	e := apptest.New(b)
	root := e.Root()
	ctx := context.Background()
	st := e.App.Store
	ids := make([]int64, users)
	for i := range ids {
		u := store.User{Username: fmt.Sprintf("bench-%04d", i), PasswordHash: "x", AffCode: fmt.Sprintf("aff%04d", i)}
		if err := st.CreateUser(ctx, &u); err != nil {
			b.Fatal(err)
		}
		ids[i] = u.ID
	}
	now := time.Now().Unix()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	rows := make([]store.Log, 0, batch)
	for i := 0; i < n; i++ {
		u := rng.IntN(users)
		rows = append(rows, store.Log{UserID: ids[u], Username: fmt.Sprintf("bench-%04d", u), Type: store.LogConsume,
			ModelName: fmt.Sprintf("model-%02d", rng.IntN(models)), CreatedAt: now - rng.Int64N(days*86400),
			Quota: rng.Int64N(5000), PromptTokens: rng.Int64N(2000), CompletionTokens: rng.Int64N(1000)})
		if len(rows) == batch || i == n-1 {
			if err := st.InsertBatch(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	b.Logf("seeded %d consume logs in %s (%.0f logs/s)", n, time.Since(start).Round(time.Millisecond),
		float64(n)/time.Since(start).Seconds())
	for _, path := range []string{
		"overview?range=7d", "overview?range=all", "charts?range=30d", "charts?range=all",
		"top-users?range=7d&limit=20", "top-users?range=all&limit=200",
	} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				root.OK("GET", "/api/admin/dashboard/"+path, nil)
			}
		})
	}
	b.Run("logs-scan-charts-30d", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.UsageByDayModel(ctx, store.LogFilter{}, now-now%86400-29*86400); err != nil {
				b.Fatal(err)
			}
		}
	})
}
