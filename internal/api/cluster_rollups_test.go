package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// TestClusterRollupsFollowReplicatedLogs: a peer derives its usage rollups
// and hour counts from the logs it applies, so its stats, dashboards and
// list totals equal the origin's; the origin's retention sweep reaches the
// peer as deleted logs with the rollups kept, and the spec's DELETE as
// deleted logs and rollups.
func TestClusterRollupsFollowReplicatedLogs(t *testing.T) {
	apptest.Parallel(t)
	nodes := apptest.NewCluster(t, 2)
	ctx := context.Background()
	one, two := nodes[0].Root(), nodes[1].Root()
	one.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", time.Now().Unix()+60), nil)
	now := time.Now().Unix()
	today := now - now%day
	var rows []store.Log
	for i := range 60 {
		rows = append(rows, store.Log{UserID: 1, Username: "root", Type: store.LogConsume, ModelName: fmt.Sprint("m", i%3),
			ChannelID: int64(i % 2), TokenName: "k", CreatedAt: today - int64(i%6)*day + int64(i)*37, Quota: int64(i + 1),
			PromptTokens: 2, CompletionTokens: 3})
	}
	if err := nodes[0].App.Store.InsertBatch(ctx, rows); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/api/log/stat", "/api/log/stat?model_name=m1", "/api/log/stat?channel=1&username=root",
		apptest.Path("/api/log/stat?start_timestamp=%d&end_timestamp=%d", today-3*day+500, today+900),
		"/api/admin/dashboard/charts?range=30d"}
	same := func(what string, want map[string]string) {
		t.Helper()
		apptest.Eventually(t, what, func() bool {
			for _, p := range paths {
				if string(two.OK("GET", p, nil).Data) != want[p] {
					return false
				}
			}
			_, total := logIDs(t, two, "/api/log/?type=2")
			return total == int64(len(rows))
		})
	}
	read := func() map[string]string {
		m := map[string]string{}
		for _, p := range paths {
			m[p] = string(one.OK("GET", p, nil).Data)
		}
		return m
	}
	before := read()
	var st logStat
	one.OK("GET", "/api/log/stat", nil).Decode(t, &st)
	if want := sumLogs(rows, func(*store.Log) bool { return true }); st != want {
		t.Fatalf("origin stat = %+v, want %+v", st, want)
	}
	same("the peer's rollups after the inserts", before)

	// Retention on the origin: logs before today−2 days go on both nodes,
	// the rollups stay.
	one.OK("PUT", "/api/option/", map[string]string{"key": "LogRetentionDays", "value": "2"})
	clock := apptest.NewClock(time.Unix(today+1, 0))
	n, err := nodes[0].App.SweepLogs(ctx, clock.Now())
	if err != nil || n == 0 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	left := 0
	for _, l := range rows {
		if l.CreatedAt >= today+1-2*day {
			left++
		}
	}
	if int(n) != len(rows)-left {
		t.Fatalf("sweep deleted %d, want %d", n, len(rows)-left)
	}
	apptest.Eventually(t, "the sweep on the peer", func() bool {
		_, total := logIDs(t, two, "/api/log/?type=2")
		return total == int64(left)
	})
	one.OK("GET", "/api/log/stat", nil).Decode(t, &st)
	var st2 logStat
	two.OK("GET", "/api/log/stat", nil).Decode(t, &st2)
	if st != st2 || st.RequestCount != int64(len(rows)) {
		t.Fatalf("stat after retention: origin %+v, peer %+v, want %d requests (rollups kept)", st, st2, len(rows))
	}

	// The spec's DELETE: logs and rollups before the target, on both.
	cut := today - 1*day + 4000
	one.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", cut), nil)
	var kept []store.Log
	for _, l := range rows {
		if l.CreatedAt >= cut {
			kept = append(kept, l)
		}
	}
	want := sumLogs(kept, func(*store.Log) bool { return true })
	apptest.Eventually(t, "the DELETE on the peer", func() bool {
		one.OK("GET", "/api/log/stat", nil).Decode(t, &st)
		two.OK("GET", "/api/log/stat", nil).Decode(t, &st2)
		return st == want && st2 == want
	})
}
