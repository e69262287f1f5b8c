package api_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// BenchmarkSeededDashboards times the dashboards, the log stats and deep
// log pages over HTTP on a database filled by cmd/seedlogs (10,000,000
// consume logs; docs/performance.md, "Dashboards over 10M logs"). It is
// skipped unless MODELGATE_SEEDED_DIR names the data directory holding the
// seeded SQLite modelgate.db, or MODELGATE_SEEDED_DSN a seeded PostgreSQL or
// MySQL database. The gateway starts on it as is (the seed ran the
// migrations). MODELGATE_SEEDED_SCAN=1 adds the same sums taken over the
// logs, for comparison (seconds each).
func BenchmarkSeededDashboards(b *testing.B) {
	var env []string
	switch dir, dsn := os.Getenv("MODELGATE_SEEDED_DIR"), os.Getenv("MODELGATE_SEEDED_DSN"); {
	case dir != "":
		env = []string{"DATA_DIR", dir, "SQL_DSN", ""}
	case dsn != "":
		env = []string{"SQL_DSN", dsn}
	default:
		b.Skip("MODELGATE_SEEDED_DIR or MODELGATE_SEEDED_DSN names no seeded database (go run ./cmd/seedlogs)")
	}
	e := apptest.New(b, env...)
	root := e.Root()
	user := e.Client()
	user.Login("seed-00001", "seed-password")
	ctx := context.Background()
	st := e.App.Store
	now := time.Now().Unix()
	today := now - now%86400
	week := today - 6*86400
	for _, c := range []struct {
		name   string
		client *apptest.Client
		path   string
	}{
		{"user-dashboard", user, "/api/user/dashboard"},
		{"overview-7d", root, "/api/admin/dashboard/overview?range=7d"},
		{"overview-all", root, "/api/admin/dashboard/overview?range=all"},
		{"charts-30d", root, "/api/admin/dashboard/charts?range=30d"},
		{"charts-all", root, "/api/admin/dashboard/charts?range=all"},
		{"top-users-7d-20", root, "/api/admin/dashboard/top-users?range=7d&limit=20"},
		{"top-users-all-200", root, "/api/admin/dashboard/top-users?range=all&limit=200"},
		{"stat-all", root, "/api/log/stat"},
		{"stat-model", root, "/api/log/stat?model_name=model-07"},
		{"stat-channel", root, "/api/log/stat?channel=3"},
		{"stat-username", root, "/api/log/stat?username=seed-00042"},
		{"stat-group", root, "/api/log/stat?group=vip"},
		{"stat-7d-days", root, apptest.Path("/api/log/stat?start_timestamp=%d", week)},
		{"stat-hours", root, apptest.Path("/api/log/stat?start_timestamp=%d&end_timestamp=%d", week-5*3600, today+2*3600-1)},
		{"stat-seconds", root, apptest.Path("/api/log/stat?start_timestamp=%d&end_timestamp=%d", week-5*3600-1234, today+2*3600+777)},
		{"stat-seconds-model", root, apptest.Path("/api/log/stat?model_name=model-07&start_timestamp=%d&end_timestamp=%d", week-1234, today+777)},
		{"stat-seconds-username", root, apptest.Path("/api/log/stat?username=seed-00042&start_timestamp=%d&end_timestamp=%d", week-1234, today+777)},
		{"stat-seconds-group", root, apptest.Path("/api/log/stat?group=vip&start_timestamp=%d&end_timestamp=%d", week-1234, today+777)},
		{"stat-token-name", root, "/api/log/stat?username=seed-00042&token_name=key-1"},
		{"self-stat", user, "/api/log/self/stat"},
		{"self-stat-seconds", user, apptest.Path("/api/log/self/stat?start_timestamp=%d&end_timestamp=%d", week-1234, today+777)},
		{"logs-p0", root, "/api/log/?p=0"},
		{"logs-p40000", root, "/api/log/?p=40000"},
		{"logs-p40000-size20", root, "/api/log/?p=40000&page_size=20"},
		{"logs-p400000-size20", root, "/api/log/?p=400000&page_size=20"},
		{"self-logs-p1000", user, "/api/log/self?p=1000"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.client.OK("GET", c.path, nil)
			}
		})
	}
	// The page of logs-p40000 read with OFFSET, as before the keyset (the
	// route also counted the logs).
	b.Run("offset-page-p40000", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.ListLogsOffset(ctx, store.LogFilter{}, store.Page{Offset: 400000, Limit: 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if os.Getenv("MODELGATE_SEEDED_SCAN") == "" {
		return
	}
	for _, c := range []struct {
		name string
		f    store.LogFilter
	}{
		{"logs-scan-stat-all", store.LogFilter{}},
		{"logs-scan-stat-7d", store.LogFilter{Start: week}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := st.LogStatsFromLogs(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	u, err := st.UserByUsername(ctx, "seed-00001")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("logs-scan-user-dashboard", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.UsageByDayModel(ctx, store.LogFilter{UserID: u.ID}, week); err != nil {
				b.Fatal(err)
			}
		}
	})
}
