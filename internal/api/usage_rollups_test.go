package api_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// Tests of the usage cubes (migration 0020): the log stats, the user
// dashboard and the admin charts answer from rollups the same numbers as
// summing the logs, over filters and time ranges aligned to days, to hours
// and to neither, after a spec DELETE and after the retention sweep.

// rollupCase is a stat request and the logs it sums.
type rollupCase struct {
	path  string
	match func(l *store.Log) bool
}

// sumLogs is the reference: the stat over rows, summed in Go.
func sumLogs(rows []store.Log, match func(l *store.Log) bool) logStat {
	var st logStat
	for i := range rows {
		l := &rows[i]
		if l.Type != store.LogConsume || !match(l) {
			continue
		}
		st.RequestCount++
		st.Quota += l.Quota
		st.PromptTokens += l.PromptTokens
		st.CompletionTokens += l.CompletionTokens
	}
	return st
}

// rollupFixture is three users' logs over ten UTC days ending today: random
// times, with some exactly on day and hour boundaries and their last
// seconds, several models, channels, groups and keys, and non-consume rows.
type rollupFixture struct {
	e          *apptest.Env
	root       *apptest.Client
	users      []*apptest.Client
	ids        []int64
	names      []string
	rows       []store.Log
	d0, today  int64
	starts     []int64 // start_timestamp values tried (0: open)
	ends       []int64 // end_timestamp values tried (0: open)
	filterSets []url.Values
}

func newRollupFixture(t *testing.T) *rollupFixture {
	e := apptest.New(t)
	f := &rollupFixture{e: e, root: e.Root(), names: []string{"ann", "ben", "cat"}}
	for _, n := range f.names {
		c, id := e.NewUser(n, 1)
		f.users, f.ids = append(f.users, c), append(f.ids, id)
	}
	// Start from no logs: the first start's system log is not ours.
	f.root.OK("DELETE", fmt.Sprintf("/api/log/?target_timestamp=%d", time.Now().Unix()+60), nil)
	now := time.Now().Unix()
	f.today = now - now%day
	f.d0 = f.today - 9*day
	rng := rand.New(rand.NewPCG(14, 2))
	models := []string{"gpt-4o", "claude-3", "gemini"}
	special := []int64{0, 3600, 7200, 3599, day - 1, day - 3600, 12*3600 + 1}
	for i := range 900 {
		u := rng.IntN(3)
		at := f.d0 + rng.Int64N(10*day)
		if i%5 == 0 { // on a boundary of some day
			at = f.d0 + rng.Int64N(10)*day + special[rng.IntN(len(special))]
		}
		typ := store.LogConsume
		switch i % 13 {
		case 3:
			typ = store.LogTopup
		case 7:
			typ = store.LogError
		}
		f.rows = append(f.rows, store.Log{UserID: f.ids[u], Username: f.names[u], CreatedAt: at, Type: typ,
			ModelName: models[rng.IntN(3)], ChannelID: rng.Int64N(3), Group: []string{"default", "vip"}[rng.IntN(2)],
			TokenName: []string{"ka", "kb"}[rng.IntN(2)], Quota: rng.Int64N(1000), PromptTokens: rng.Int64N(500),
			CompletionTokens: rng.Int64N(300)})
	}
	// Batches written by parallel transactions, as concurrent settlements.
	var wg sync.WaitGroup
	errs := make(chan error, 9)
	for b := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.App.Store.InsertBatch(context.Background(), f.rows[b*100:(b+1)*100])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d3 := f.d0 + 3*day
	f.starts = []int64{0, d3, d3 + 7200, d3 + 7200 + 123, f.d0 + 6*day + 59, f.today}
	f.ends = []int64{0, f.d0 + 7*day - 1, f.d0 + 7*day + 3*3600 - 1, f.d0 + 7*day + 3*3600 + 77, d3 + 7200 + 500, f.today + 3600}
	f.filterSets = []url.Values{
		{}, {"model_name": {"gpt-4o"}}, {"channel": {"2"}}, {"username": {"ben"}}, {"group": {"vip"}},
		{"token_name": {"kb"}}, {"model_name": {"claude-3"}, "channel": {"1"}}, {"type": {"1"}},
		{"username": {"ann"}, "group": {"default"}, "model_name": {"gemini"}}, {"status": {"500"}},
	}
	return f
}

// cases are the admin stat requests (every filter set × start × end) and
// each user's own (a model or none × start × end).
func (f *rollupFixture) cases() (admin []rollupCase, self [][]rollupCase) {
	inRange := func(start, end int64) func(l *store.Log) bool {
		return func(l *store.Log) bool {
			return (start == 0 || l.CreatedAt >= start) && (end == 0 || l.CreatedAt <= end)
		}
	}
	for _, start := range f.starts {
		for _, end := range f.ends {
			r := inRange(start, end)
			for _, fs := range f.filterSets {
				q := url.Values{}
				for k, v := range fs {
					q[k] = v
				}
				if start != 0 {
					q.Set("start_timestamp", fmt.Sprint(start))
				}
				if end != 0 {
					q.Set("end_timestamp", fmt.Sprint(end))
				}
				fs := fs
				admin = append(admin, rollupCase{"/api/log/stat?" + q.Encode(), func(l *store.Log) bool {
					return r(l) && (fs.Get("model_name") == "" || l.ModelName == fs.Get("model_name")) &&
						(fs.Get("channel") == "" || fmt.Sprint(l.ChannelID) == fs.Get("channel")) &&
						(fs.Get("username") == "" || l.Username == fs.Get("username")) &&
						(fs.Get("group") == "" || l.Group == fs.Get("group")) &&
						(fs.Get("token_name") == "" || l.TokenName == fs.Get("token_name")) &&
						(fs.Get("status") == "" || fmt.Sprint(l.Status) == fs.Get("status"))
				}})
			}
		}
	}
	self = make([][]rollupCase, len(f.ids))
	for u, id := range f.ids {
		for _, start := range f.starts {
			for _, end := range f.ends {
				r := inRange(start, end)
				for _, model := range []string{"", "gemini"} {
					// username and channel are ignored on the self routes.
					q := url.Values{"username": {"cat"}, "channel": {"1"}}
					if model != "" {
						q.Set("model_name", model)
					}
					if start != 0 {
						q.Set("start_timestamp", fmt.Sprint(start))
					}
					if end != 0 {
						q.Set("end_timestamp", fmt.Sprint(end))
					}
					self[u] = append(self[u], rollupCase{"/api/log/self/stat?" + q.Encode(), func(l *store.Log) bool {
						return r(l) && l.UserID == id && (model == "" || l.ModelName == model)
					}})
				}
			}
		}
	}
	return admin, self
}

// checkStats asks every stat case and compares with the sums over rows
// (those matching keep, when set; the cases filtered by keep are skipped).
func (f *rollupFixture) checkStats(t *testing.T, when string, rows []store.Log) {
	t.Helper()
	admin, self := f.cases()
	bad := 0
	check := func(c *apptest.Client, rc rollupCase) {
		var got logStat
		c.OK("GET", rc.path, nil).Decode(t, &got)
		if want := sumLogs(rows, rc.match); got != want && bad < 10 {
			bad++
			t.Errorf("%s: GET %s = %+v, the logs sum to %+v", when, rc.path, got, want)
		}
	}
	for _, rc := range admin {
		check(f.root, rc)
	}
	for u, cs := range self {
		for _, rc := range cs {
			check(f.users[u], rc)
		}
	}
	// The lists' totals (from the hour counts for type and time filters).
	for _, start := range f.starts {
		for _, end := range f.ends {
			for _, typ := range []int{store.LogConsume, store.LogTopup, store.LogError} {
				var want int64
				for i := range rows {
					l := &rows[i]
					if l.Type == typ && (start == 0 || l.CreatedAt >= start) && (end == 0 || l.CreatedAt <= end) {
						want++
					}
				}
				path := apptest.Path("/api/log/?type=%d&start_timestamp=%d&end_timestamp=%d", typ, start, end)
				if _, total := logIDs(t, f.root, path); total != want && bad < 10 {
					bad++
					t.Errorf("%s: GET %s total = %d, the logs are %d", when, path, total, want)
				}
			}
		}
	}
}

// checkDashboards compares the user dashboards, the admin charts (30 days)
// and top users (all time) with the same sums over rows.
func (f *rollupFixture) checkDashboards(t *testing.T, when string, rows []store.Log) {
	t.Helper()
	type dm struct {
		day   int64
		model string
	}
	byDayModel := func(userID, since int64) []usageRow {
		sums := map[dm]*usageRow{}
		for i := range rows {
			l := &rows[i]
			if l.Type != store.LogConsume || l.CreatedAt < since || (userID != 0 && l.UserID != userID) {
				continue
			}
			k := dm{l.CreatedAt - l.CreatedAt%day, l.ModelName}
			r := sums[k]
			if r == nil {
				r = &usageRow{Day: time.Unix(k.day, 0).UTC().Format(time.DateOnly), ModelName: k.model}
				sums[k] = r
			}
			r.RequestCount++
			r.Quota += l.Quota
			r.PromptTokens += l.PromptTokens
			r.CompletionTokens += l.CompletionTokens
		}
		out := []usageRow{}
		for _, r := range sums {
			out = append(out, *r)
		}
		slices.SortFunc(out, func(a, b usageRow) int {
			return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.ModelName, b.ModelName))
		})
		return out
	}
	for u, c := range f.users {
		var got []usageRow
		c.OK("GET", "/api/user/dashboard", nil).Decode(t, &got)
		if want := byDayModel(f.ids[u], f.today-6*day); !slices.Equal(got, want) {
			t.Errorf("%s: %s's dashboard = %+v\nthe logs say %+v", when, f.names[u], got, want)
		}
	}
	charts := apptest.OKData[[]chartRow](f.root, "GET", "/api/admin/dashboard/charts?range=30d", nil)
	want := byDayModel(0, f.today-29*day)
	if len(charts) != len(want) {
		t.Fatalf("%s: charts %+v\nthe logs say %+v", when, charts, want)
	}
	for i := range want {
		if usageRow(charts[i]) != want[i] {
			t.Errorf("%s: charts row %d = %+v, the logs say %+v", when, i, charts[i], want[i])
		}
	}
	top := apptest.OKData[topUsers](f.root, "GET", "/api/admin/dashboard/top-users?range=all", nil)
	for _, it := range top.Items {
		st := sumLogs(rows, func(l *store.Log) bool { return l.UserID == it.ID })
		if it.RequestCount != st.RequestCount || it.Quota != st.Quota {
			t.Errorf("%s: top user %d = %d requests, %d quota; the logs say %+v", when, it.ID, it.RequestCount, it.Quota, st)
		}
	}
}

func TestUsageRollupsAnswerLikeTheLogs(t *testing.T) {
	f := newRollupFixture(t)
	f.checkStats(t, "after the inserts", f.rows)
	f.checkDashboards(t, "after the inserts", f.rows)

	// The spec's DELETE at a second inside an hour: the rollups lose
	// exactly the deleted logs.
	cut := f.d0 + 2*day + 5000 + 17
	var n int64
	f.root.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", cut), nil).Decode(t, &n)
	kept := slices.DeleteFunc(slices.Clone(f.rows), func(l store.Log) bool { return l.CreatedAt < cut })
	if n != int64(len(f.rows)-len(kept)) || n == 0 {
		t.Fatalf("DELETE removed %d, want %d", n, len(f.rows)-len(kept))
	}
	f.checkStats(t, "after DELETE /api/log/", kept)
	f.checkDashboards(t, "after DELETE /api/log/", kept)

	// More logs after the delete, then retention: the sweep deletes the logs
	// but the rollups keep them, so sums over whole days (the dashboards,
	// stats without a time range) still count them, and stats over ranges
	// wholly within the retention equal the logs left.
	more := make([]store.Log, 0, 40)
	for i := range 40 {
		more = append(more, store.Log{UserID: f.ids[i%3], Username: f.names[i%3], Type: store.LogConsume,
			CreatedAt: f.d0 + int64(i%10)*day + int64(i)*97, ModelName: "gpt-4o", ChannelID: 1, Group: "vip",
			TokenName: "ka", Quota: int64(i + 1), PromptTokens: 2, CompletionTokens: 3})
	}
	insertLogs(t, f.e, more...)
	kept = append(kept, more...)
	f.checkStats(t, "after more inserts", kept)
	f.checkDashboards(t, "after more inserts", kept)

	clock := apptest.NewClock(time.Unix(f.today+3*3600+41, 0))
	f.root.OK("PUT", "/api/option/", map[string]string{"key": "LogRetentionDays", "value": "4"})
	// The option change leaves an admin log row, written by the batched
	// log writer: committed now, so the count below does not depend on
	// whether the writer's batch beat it (a slow -race run saw 446 of 445).
	f.e.SettleAll()
	const optionLog = 1
	boundary := clock.Now().Unix() - 4*day
	deleted, err := f.e.App.SweepLogs(context.Background(), clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	left := slices.DeleteFunc(slices.Clone(kept), func(l store.Log) bool { return l.CreatedAt < boundary })
	if deleted != int64(len(kept)-len(left)) || deleted == 0 {
		t.Fatalf("retention deleted %d, want %d", deleted, len(kept)-len(left))
	}
	if _, total := logIDs(t, f.root, "/api/log/"); total != int64(len(left)+optionLog) {
		t.Fatalf("logs left = %d, want %d and the option change's", total, len(left))
	}
	f.checkDashboards(t, "after retention (the rollups keep the days)", kept)
	for _, path := range []string{"/api/log/stat", "/api/log/stat?model_name=gpt-4o", "/api/log/stat?username=ben",
		apptest.Path("/api/log/stat?start_timestamp=%d", boundary), apptest.Path("/api/log/stat?start_timestamp=%d&group=vip", boundary+1),
		apptest.Path("/api/log/stat?start_timestamp=%d&end_timestamp=%d", boundary+3600, f.today+7000)} {
		u, _ := url.Parse(path)
		q := u.Query()
		var from, to int64
		fmt.Sscan(q.Get("start_timestamp"), &from)
		fmt.Sscan(q.Get("end_timestamp"), &to)
		ref := kept // no time range: the whole days of the rollups, deleted logs included
		if from != 0 {
			ref = left // within the retention: the logs left
		}
		var got logStat
		f.root.OK("GET", path, nil).Decode(t, &got)
		want := sumLogs(ref, func(l *store.Log) bool {
			return (from == 0 || l.CreatedAt >= from) && (to == 0 || l.CreatedAt <= to) &&
				(q.Get("model_name") == "" || l.ModelName == q.Get("model_name")) &&
				(q.Get("username") == "" || l.Username == q.Get("username")) &&
				(q.Get("group") == "" || l.Group == q.Get("group"))
		})
		if got != want {
			t.Errorf("after retention: GET %s = %+v, want %+v", path, got, want)
		}
	}
}
