package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// TestLogRetentionBoundary: with LogRetentionDays = N the sweep at now
// deletes exactly the logs created before now − N days, of every type, in
// batches (more old rows than one batch), and nothing else; a log created at
// the boundary second stays until the clock moves one second. 0 keeps every
// log. The rollups keep what the sweep deleted: the stat without a time
// range still counts it.
func TestLogRetentionBoundary(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	_, uid := e.NewUser("old", 1)
	ctx := context.Background()
	clock := apptest.NewClock(time.Unix(1_790_000_000+1234, 0))
	root.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", time.Now().Unix()+60), nil)
	const days = 3
	boundary := clock.Now().Unix() - days*day
	types := []int{store.LogConsume, store.LogTopup, store.LogAdmin, store.LogSystem, store.LogError}
	var rows []store.Log
	add := func(at int64, n int) {
		for i := range n {
			rows = append(rows, store.Log{UserID: uid, Username: "old", CreatedAt: at, Type: types[i%len(types)],
				ModelName: "m", Quota: int64(i%7 + 1), PromptTokens: 1, CompletionTokens: 2})
		}
	}
	add(boundary-40*day, 3)
	add(boundary-1, 4500) // more than two batches, all in the last second before the boundary
	add(boundary, 6)
	add(boundary+1, 5)
	add(clock.Now().Unix(), 4)
	for i := 0; i < len(rows); i += 1000 {
		insertLogs(t, e, rows[i:min(i+1000, len(rows))]...)
	}
	all := sumLogs(rows, func(*store.Log) bool { return true })
	sweep := func() int64 {
		t.Helper()
		n, err := e.App.SweepLogs(ctx, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sweep(); n != 0 {
		t.Fatalf("the default (0, keep) deleted %d", n)
	}
	root.OK("PUT", "/api/option/", map[string]string{"key": "LogRetentionDays", "value": fmt.Sprint(days)})
	if n := sweep(); n != 4503 {
		t.Fatalf("sweep deleted %d, want the 4,503 logs older than %d days", n, days)
	}
	want := slices.DeleteFunc(slices.Clone(rows), func(l store.Log) bool { return l.CreatedAt < boundary })
	slices.Reverse(want) // newest first; same second: the later id first
	wantLogs(t, root, "/api/log/?username=old&page_size=100", want...)
	if n := sweep(); n != 0 {
		t.Fatalf("a second sweep deleted %d", n)
	}
	var st logStat
	root.OK("GET", "/api/log/stat", nil).Decode(t, &st)
	if st != all {
		t.Errorf("stat over all time after the sweep = %+v, want %+v (the rollups keep deleted logs)", st, all)
	}
	clock.Advance(time.Second)
	if n := sweep(); n != 6 {
		t.Fatalf("one second later the sweep deleted %d, want the 6 logs at the old boundary", n)
	}
	wantLogs(t, root, "/api/log/?username=old&page_size=100", want[:len(want)-6]...)
	root.OK("PUT", "/api/option/", map[string]string{"key": "LogRetentionDays", "value": "0"})
	clock.Advance(365 * 24 * time.Hour)
	if n := sweep(); n != 0 {
		t.Fatalf("retention 0 deleted %d", n)
	}
	root.Fail("PUT", "/api/option/", map[string]string{"key": "LogRetentionDays", "value": "-1"}, 200,
		"配置项 LogRetentionDays 的值无效: 必须是 0 到 36500 之间的整数")
}

// TestLogPagesByKey: the list routes read a page past the first by key
// (locating it through the hour counts when only type and times filter);
// every page of every size equals the OFFSET query's, and the total the
// count, on a table with gaps in its ids, times out of id order over five
// hours and many logs in one second, with and without filters, time ranges
// aligned to hours or not, and a page past the end is empty.
func TestLogPagesByKey(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ann, annID := e.NewUser("ann", 1)
	_, benID := e.NewUser("ben", 1)
	ctx := context.Background()
	root.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", time.Now().Unix()+60), nil)
	rng := rand.New(rand.NewPCG(4, 40))
	var rows []store.Log
	for i := range 500 {
		u, name := annID, "ann"
		if i%3 == 0 {
			u, name = benID, "ben"
		}
		typ, at := store.LogConsume+i%2, base+50*rng.Int64N(5*3600/50)
		if i%5 == 2 || i%7 == 3 {
			typ, at = store.LogError, base-30*day // swept below: gaps in the ids
		}
		rows = append(rows, store.Log{UserID: u, Username: name, Type: typ, CreatedAt: at, ModelName: "m", Quota: 1})
	}
	insertLogs(t, e, rows...)
	if n, err := e.App.SweepErrorLogs(ctx, time.Now()); err != nil || n < 100 {
		t.Fatalf("error log sweep: %d, %v", n, err)
	}
	for _, c := range []struct {
		client *apptest.Client
		path   string
		f      store.LogFilter
	}{
		{root, "/api/log/?", store.LogFilter{}},
		{root, "/api/log/?type=2&", store.LogFilter{Type: store.LogConsume}},
		{root, "/api/log/?username=ben&", store.LogFilter{Username: "ben"}},
		{root, apptest.Path("/api/log/?start_timestamp=%d&end_timestamp=%d&", base+10, base+40), store.LogFilter{Start: base + 10, End: base + 40}},
		{root, apptest.Path("/api/log/?type=2&start_timestamp=%d&end_timestamp=%d&", base+1800, base+4*3600+50),
			store.LogFilter{Type: store.LogConsume, Start: base + 1800, End: base + 4*3600 + 50}},
		{root, apptest.Path("/api/log/?start_timestamp=%d&", base+3600), store.LogFilter{Start: base + 3600}},
		{root, apptest.Path("/api/log/?end_timestamp=%d&", base+2*3600-1), store.LogFilter{End: base + 2*3600 - 1}},
		{ann, "/api/log/self?", store.LogFilter{UserID: annID}},
	} {
		all, err := e.App.Store.ListLogsOffset(ctx, c.f, store.Page{Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if _, total := logIDs(t, c.client, c.path); total != int64(len(all)) {
			t.Fatalf("%s total = %d, want %d", c.path, total, len(all))
		}
		for _, size := range []int{1, 7, 20, 100} {
			for p := 0; ; p++ {
				ref, err := e.App.Store.ListLogsOffset(ctx, c.f, store.Page{Offset: p * size, Limit: size})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := logIDs(t, c.client, apptest.Path("%sp=%d&page_size=%d", c.path, p, size))
				want := make([]int64, len(ref))
				for i := range ref {
					want[i] = ref[i].ID
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%sp=%d&page_size=%d = %v, OFFSET gives %v", c.path, p, size, got, want)
				}
				if len(ref) == 0 {
					break
				}
			}
		}
	}
}
