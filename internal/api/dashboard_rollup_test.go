package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Tests of the usage rollups behind the admin dashboard, through its
// charts route.

// TestAdminDashboardRollupUnderConcurrency writes consume logs from
// parallel transactions, as concurrent settlements do, and checks that the
// charts (from the rollup) equal the same sums taken over the logs.
func TestAdminDashboardRollupUnderConcurrency(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ctx := context.Background()
	now := time.Now().Unix()
	d0 := now - now%day
	var ids []int64
	for i := range 3 {
		_, id := e.NewUser(fmt.Sprintf("conc-%d", i), 1)
		ids = append(ids, id)
	}
	const writers, batches = 8, 10
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			var err error
			for b := 0; b < batches && err == nil; b++ {
				var rows []store.Log
				for i := range 6 {
					k := w + b + i
					rows = append(rows, store.Log{UserID: ids[k%3], Type: store.LogConsume,
						ModelName: fmt.Sprintf("m-%d", k%2), CreatedAt: d0 - int64(k%3)*day + int64(i),
						Quota: int64(k + 1), PromptTokens: int64(i), CompletionTokens: 1})
				}
				err = e.App.Store.InsertBatch(ctx, rows)
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want, err := e.App.Store.UsageByDayModel(ctx, store.LogFilter{}, d0-29*day)
	if err != nil {
		t.Fatal(err)
	}
	got := apptest.OKData[[]chartRow](root, "GET", "/api/admin/dashboard/charts?range=30d", nil)
	var sum int64
	for _, r := range got {
		sum += r.RequestCount
	}
	if len(got) != len(want) || sum != writers*batches*6 {
		t.Fatalf("charts %+v, logs say %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Day != time.Unix(w.Day, 0).UTC().Format(time.DateOnly) || g.ModelName != w.ModelName ||
			g.RequestCount != w.RequestCount || g.Quota != w.Quota || g.PromptTokens != w.PromptTokens ||
			g.CompletionTokens != w.CompletionTokens {
			t.Errorf("row %d: charts %+v, logs %+v", i, g, w)
		}
	}
}

// TestAdminDashboardAbsurdCounts: token counts an upstream may report
// (4e18 a call) saturate in the rollups at pricing.MaxCounter, as the
// used_quota counters do, instead of failing the logs' transaction; a log
// cut rebuilds them the same way.
func TestAdminDashboardAbsurdCounts(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ctx := context.Background()
	now := time.Now().Unix()
	d0 := now - now%day
	_, id := e.NewUser("absurd", 1)
	absurd := store.Log{UserID: id, Type: store.LogConsume, ModelName: "m", CreatedAt: d0 - day + 10,
		Quota: 5, PromptTokens: 4e18, CompletionTokens: 4e18}
	if err := e.App.Store.InsertBatch(ctx, []store.Log{absurd, absurd, absurd}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.App.Store.InsertBatch(ctx, []store.Log{absurd}); err != nil {
			t.Fatal(err)
		}
	}
	want := chartRow{Day: time.Unix(d0-day, 0).UTC().Format(time.DateOnly), ModelName: "m", RequestCount: 5, Quota: 25,
		PromptTokens: pricing.MaxCounter, CompletionTokens: pricing.MaxCounter}
	got := apptest.OKData[[]chartRow](root, "GET", "/api/admin/dashboard/charts", nil)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("charts %+v, want %+v", got, want)
	}
	root.OK("DELETE", fmt.Sprintf("/api/log/?target_timestamp=%d", d0-day+5), nil) // rebuilds that day
	got = apptest.OKData[[]chartRow](root, "GET", "/api/admin/dashboard/charts", nil)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("charts after the cut %+v, want %+v", got, want)
	}
}
