package api_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// Admin dashboard tests: a seeded data set whose figures the test sums
// itself from its own seed lists, read back through the three routes.

const day = int64(86400)

type seedLog struct {
	user                      int // index into the test's users
	model                     string
	daysAgo, sec              int64
	quota, prompt, completion int64
}

type seedOrder struct {
	typ, status int
	fen         int64
	daysAgo     int64 // pay_time = that day's 00:00 UTC + 60; -1: pay_time 0
}

type overview struct {
	Users struct {
		Total, Enabled, Disabled, Deleted int64
		NewToday                          int64 `json:"new_today"`
		New7d                             int64 `json:"new_7d"`
		New30d                            int64 `json:"new_30d"`
		Active7d                          int64 `json:"active_7d"`
	} `json:"users"`
	Tokens, Channels, Plans struct{ Total, Enabled int64 }
	Redemptions             struct{ Total, Used, Unused int64 }
	Subscriptions           struct{ Total, Active, Expired int64 }
	Quota                   struct{ Today, Week, Month, Total int64 }
	Revenue                 struct{ Total, Topup, Subscription, Refund float64 }
	Range                   string `json:"range"`
	GeneratedAt             int64  `json:"generated_at"`
}

type chartRow struct {
	Day              string `json:"day"`
	ModelName        string `json:"model_name"`
	RequestCount     int64  `json:"request_count"`
	Quota            int64  `json:"quota"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

type topUser struct {
	ID              int64  `json:"id"`
	Username        string `json:"username"`
	Email           string `json:"email"`
	RequestCount    int64  `json:"request_count"`
	Quota           int64  `json:"quota"`
	Balance         int64  `json:"balance"`
	CurrentPlanName string `json:"current_plan_name"`
}

type topUsers struct {
	Range string    `json:"range"`
	Items []topUser `json:"items"`
}

// windowStart is the first second of a range's window: whole UTC days.
func windowStart(r string, now int64) int64 {
	d0 := now - now%day
	switch r {
	case "today":
		return d0
	case "7d", "":
		return d0 - 6*day
	case "30d":
		return d0 - 29*day
	}
	return math.MinInt64
}

func TestAdminDashboard(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ctx := context.Background()
	now := time.Now().Unix()
	d0 := now - now%day

	// Users: 0 busy, 1 as busy with less quota, 2 disabled, 3 deleted, 4
	// without calls, 5 created 10 days ago, 6 created 40 days ago.
	names := []string{"dash-a", "dash-b", "dash-c", "dash-d", "dash-e", "dash-f", "dash-g"}
	ids := make([]int64, len(names))
	for i, n := range names {
		_, ids[i] = e.NewUser(n, 1)
	}
	root.OK("POST", "/api/user/manage", map[string]any{"username": "dash-c", "action": "disable"})
	root.OK("POST", "/api/user/manage", map[string]any{"username": "dash-d", "action": "delete"})
	e.ExecSQL(
		fmt.Sprintf("UPDATE users SET created_at = %d, email = 'f@example.com' WHERE id = %d", now-10*day, ids[5]),
		fmt.Sprintf("UPDATE users SET created_at = %d WHERE id = %d", now-40*day, ids[6]),
		fmt.Sprintf("UPDATE users SET quota = 777 WHERE id = %d", ids[0]),
	)

	logs := []seedLog{
		{0, "m-1", 0, 0, 100, 10, 5}, {0, "m-1", 0, 1, 50, 1, 1}, {0, "m-2", 1, 3600, 30, 3, 3},
		{0, "m-2", 6, 10, 7, 1, 0}, {0, "m-1", 7, 10, 1000, 100, 100}, {0, "m-1", 29, 0, 5, 1, 1},
		{0, "m-1", 40, 0, 9000, 9, 9},
		{1, "m-1", 0, 2, 40, 4, 4}, {1, "m-2", 0, 3, 20, 2, 2}, {1, "m-2", 3, 3, 1, 1, 1},
		{1, "m-3", 30, 0, 3, 3, 3},
		{2, "m-3", 2, 5, 60, 6, 6},
		{3, "m-1", 0, 4, 500, 50, 50}, {3, "m-1", 0, 5, 500, 50, 50}, {3, "m-1", 0, 6, 500, 50, 50},
		{5, "m-2", 12, 0, 11, 1, 1},
		{6, "m-3", 35, 0, 13, 1, 1},
	}
	var rows []store.Log
	for _, l := range logs {
		rows = append(rows, store.Log{UserID: ids[l.user], Username: names[l.user], Type: store.LogConsume,
			ModelName: l.model, CreatedAt: d0 - l.daysAgo*day + l.sec, Quota: l.quota,
			PromptTokens: l.prompt, CompletionTokens: l.completion})
	}
	// Logs that are not consumption never count.
	rows = append(rows,
		store.Log{UserID: ids[4], Type: store.LogTopup, ModelName: "m-1", Quota: 99999, CreatedAt: d0},
		store.Log{UserID: ids[4], Type: store.LogError, ModelName: "m-1", Quota: 0, CreatedAt: d0},
		store.Log{UserID: ids[4], Type: store.LogAdmin, Quota: 12345, CreatedAt: d0})
	if err := e.App.Store.InsertBatch(ctx, rows); err != nil {
		t.Fatal(err)
	}

	// Plans, subscriptions: a has two active ones (the shorter names the
	// current plan), b one active and one past its end while stored
	// active, c a cancelled one, f an expired one.
	planID := func(name string, status int) int64 {
		var p struct{ ID int64 }
		root.OK("POST", "/api/plan/", map[string]any{"name": name, "price": 10, "duration_days": 30, "status": status,
			"model_limits": `{"m-1":{"request_period":10}}`}).Decode(t, &p)
		return p.ID
	}
	long, short, hidden := planID("长期套餐", 1), planID("短期套餐", 1), planID("下架套餐", 0)
	sub := func(user int, plan int64, days int) int64 {
		var s struct{ ID int64 }
		root.OK("POST", "/api/subscription/", map[string]any{"user_id": ids[user], "plan_id": plan, "duration_days": days}).Decode(t, &s)
		return s.ID
	}
	sub(0, long, 30)
	sub(0, short, 5)
	sub(1, long, 20)
	past := sub(1, short, 3)
	cancelled := sub(2, hidden, 30)
	expired := sub(5, long, 30)
	e.ExecSQL(
		fmt.Sprintf("UPDATE user_plans SET start_time = %d, end_time = %d WHERE id = %d", now-10*day, now-5, past),
		fmt.Sprintf("UPDATE user_plans SET status = 3 WHERE id = %d", cancelled),
		fmt.Sprintf("UPDATE user_plans SET status = 2 WHERE id = %d", expired),
	)

	// Keys: 1 enabled, 1 enabled past its expiry, 1 disabled. Channels: 2
	// enabled, 1 disabled. Codes: 2 unused, 1 used, 1 disabled.
	e.ExecSQL(
		fmt.Sprintf("INSERT INTO tokens (id, user_id, name, key_hash, key_prefix, key_suffix, status, expired_time) VALUES "+
			"(900001, %[1]d, 'k1', 'h1', 'p', 's', 1, -1), (900002, %[1]d, 'k2', 'h2', 'p', 's', 1, %[2]d), "+
			"(900003, %[1]d, 'k3', 'h3', 'p', 's', 2, -1)", ids[0], now-100),
		"INSERT INTO channels (id, name, status) VALUES (900001, 'c1', 1), (900002, 'c2', 1), (900003, 'c3', 2)",
		"INSERT INTO redemptions (id, name, code, status, quota) VALUES (900001, 'r', 'code-1', 1, 1), "+
			"(900002, 'r', 'code-2', 1, 1), (900003, 'r', 'code-3', 3, 1), (900004, 'r', 'code-4', 2, 1)",
	)

	// Orders: paid and refunded of both types across the range
	// boundaries, plus pending and cancelled ones, which never count.
	orders := []seedOrder{
		{2, 1, 1000, 0}, {1, 1, 2990, 0}, {2, 3, 500, 0}, {2, 0, 70000, 0}, {1, 2, 80000, 0},
		{2, 1, 123, 6}, {1, 1, 4567, 7}, {2, 3, 250, 7}, {1, 3, 990, 20}, {2, 1, 1, 29},
		{1, 1, 100000, 45}, {2, 3, 11, -1},
	}
	for i, o := range orders {
		pay := int64(0)
		if o.daysAgo >= 0 {
			pay = d0 - o.daysAgo*day + 60
		}
		e.ExecSQL(fmt.Sprintf("INSERT INTO orders (id, type, order_no, user_id, amount_cents, status, pay_time) "+
			"VALUES (%d, %d, 'TP%014d', %d, %d, %d, %d)", 900001+i, o.typ, i, ids[0], o.fen, o.status, pay))
		// The money received, as the activation records it (a refunded
		// order never paid received nothing).
		if (o.status == 1 || o.status == 3) && pay > 0 {
			refunded := int64(0)
			if o.status == 3 {
				refunded = pay + 1
			}
			e.ExecSQL(fmt.Sprintf("INSERT INTO received_payments (order_id, order_no, user_id, order_type, amount_cents, pay_method, pay_time, refund_time) "+
				"VALUES (%d, 'TP%014d', %d, %d, %d, 'bank', %d, %d)", 900001+i, i, ids[0], o.typ, o.fen, pay, refunded))
		}
	}

	// Overview, for every range.
	for _, rng := range []string{"", "today", "7d", "30d", "all"} {
		got := apptest.OKData[overview](root, "GET", "/api/admin/dashboard/overview?range="+rng, nil)
		gen := got.GeneratedAt
		if gen < now || gen > time.Now().Unix() {
			t.Fatalf("generated_at %d outside the test's time", gen)
		}
		g0 := gen - gen%day
		var want overview
		want.Range = rng
		if rng == "" {
			want.Range = "7d"
		}
		want.GeneratedAt = gen
		u := &want.Users
		u.Total, u.Enabled, u.Disabled, u.Deleted = 8, 6, 1, 1 // root and seven
		u.NewToday, u.New7d, u.New30d = 6, 6, 7
		active := map[int]bool{}
		for _, l := range logs {
			at := d0 - l.daysAgo*day + l.sec
			if at >= g0-6*day {
				active[l.user] = true
				want.Quota.Week += l.quota
			}
			if at >= g0 {
				want.Quota.Today += l.quota
			}
			if at >= g0-29*day {
				want.Quota.Month += l.quota
			}
			want.Quota.Total += l.quota
		}
		u.Active7d = int64(len(active))
		want.Tokens.Total, want.Tokens.Enabled = 3, 1
		want.Channels.Total, want.Channels.Enabled = 3, 2
		want.Plans.Total, want.Plans.Enabled = 3, 2
		want.Redemptions.Total, want.Redemptions.Used, want.Redemptions.Unused = 4, 1, 2
		want.Subscriptions.Total, want.Subscriptions.Active, want.Subscriptions.Expired = 6, 3, 2
		var topup, plan, refund int64
		for _, o := range orders {
			pay := int64(0)
			if o.daysAgo >= 0 {
				pay = d0 - o.daysAgo*day + 60
			}
			if pay < windowStart(rng, gen) && rng != "all" {
				continue
			}
			switch {
			case o.status == 3 && pay > 0:
				refund += o.fen
			case o.status == 1 && o.typ == 2:
				topup += o.fen
			case o.status == 1 && o.typ == 1:
				plan += o.fen
			}
		}
		want.Revenue.Topup, want.Revenue.Subscription = float64(topup)/100, float64(plan)/100
		want.Revenue.Total, want.Revenue.Refund = float64(topup+plan)/100, float64(refund)/100
		if got != want {
			t.Errorf("overview range %q:\n got %+v\nwant %+v", rng, got, want)
		}
	}

	checkCharts(t, root, logs, now)
	checkTopUsers(t, root, logs, names, ids)

	// Deleting logs mid-day cuts the rollups exactly: the day of the cut
	// keeps what is left of it.
	cut := d0 - 29*day + 1
	root.OK("DELETE", fmt.Sprintf("/api/log/?target_timestamp=%d", cut), nil)
	var left []seedLog
	for _, l := range logs {
		if d0-l.daysAgo*day+l.sec >= cut {
			left = append(left, l)
		}
	}
	if len(left) == len(logs) {
		t.Fatal("the cut deletes nothing")
	}
	checkCharts(t, root, left, now)
	got := apptest.OKData[overview](root, "GET", "/api/admin/dashboard/overview?range=all", nil)
	var total int64
	for _, l := range left {
		total += l.quota
	}
	if got.Quota.Total != total {
		t.Errorf("quota.total after the cut = %d, want %d", got.Quota.Total, total)
	}
}

func checkCharts(t *testing.T, root *apptest.Client, logs []seedLog, now int64) {
	t.Helper()
	d0 := now - now%day
	for _, rng := range []string{"", "today", "7d", "30d", "all"} {
		since := windowStart(rng, now)
		if rng == "all" {
			since = d0 - 29*day // capped to 30 days
		}
		sums := map[[2]string]*chartRow{}
		for _, l := range logs {
			at := d0 - l.daysAgo*day + l.sec
			if at < since {
				continue
			}
			k := [2]string{time.Unix(at, 0).UTC().Format(time.DateOnly), l.model}
			r := sums[k]
			if r == nil {
				r = &chartRow{Day: k[0], ModelName: k[1]}
				sums[k] = r
			}
			r.RequestCount++
			r.Quota += l.quota
			r.PromptTokens += l.prompt
			r.CompletionTokens += l.completion
		}
		want := []chartRow{}
		for _, r := range sums {
			want = append(want, *r)
		}
		slices.SortFunc(want, func(a, b chartRow) int {
			if a.Day != b.Day {
				return map[bool]int{true: -1, false: 1}[a.Day < b.Day]
			}
			return map[bool]int{true: -1, false: 1}[a.ModelName < b.ModelName]
		})
		got := apptest.OKData[[]chartRow](root, "GET", "/api/admin/dashboard/charts?range="+rng, nil)
		if !slices.Equal(got, want) {
			t.Errorf("charts range %q:\n got %+v\nwant %+v", rng, got, want)
		}
	}
}

func checkTopUsers(t *testing.T, root *apptest.Client, logs []seedLog, names []string, ids []int64) {
	t.Helper()
	now := time.Now().Unix()
	d0 := now - now%day
	plans := map[int]string{0: "短期套餐", 1: "长期套餐"}
	emails := map[int]string{5: "f@example.com"}
	balances := map[int]int64{0: 777}
	for _, rng := range []string{"", "today", "7d", "30d", "all"} {
		req, quota := map[int]int64{}, map[int]int64{}
		for _, l := range logs {
			if l.user == 3 || d0-l.daysAgo*day+l.sec < windowStart(rng, now) {
				continue // deleted, or outside the window
			}
			req[l.user]++
			quota[l.user] += l.quota
		}
		var want []topUser
		for u := range req {
			want = append(want, topUser{ID: ids[u], Username: names[u], Email: emails[u], RequestCount: req[u],
				Quota: quota[u], Balance: balances[u], CurrentPlanName: plans[u]})
		}
		slices.SortFunc(want, func(a, b topUser) int {
			switch {
			case a.RequestCount != b.RequestCount:
				return int(b.RequestCount - a.RequestCount)
			case a.Quota != b.Quota:
				return int(b.Quota - a.Quota)
			}
			return int(a.ID - b.ID)
		})
		wantRange := rng
		if rng == "" {
			wantRange = "7d"
		}
		got := apptest.OKData[topUsers](root, "GET", "/api/admin/dashboard/top-users?range="+rng, nil)
		if got.Range != wantRange || !slices.Equal(got.Items, want) {
			t.Errorf("top-users range %q:\n got %+v\nwant %s %+v", rng, got, wantRange, want)
		}
		if len(want) > 1 {
			one := apptest.OKData[topUsers](root, "GET", "/api/admin/dashboard/top-users?limit=1&range="+rng, nil)
			if len(one.Items) != 1 || one.Items[0] != want[0] {
				t.Errorf("top-users limit 1 range %q: %+v", rng, one.Items)
			}
		}
	}
}

func TestAdminDashboardParameters(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	const badRange = "参数 range 只能是 today、7d、30d 或 all"
	const badLimit = "参数 limit 必须是 1 到 200 之间的整数"
	for _, p := range []string{"overview", "charts", "top-users"} {
		for _, r := range []string{"1d", "ALL", "7d%20", "%00", "%FF", "today,all"} {
			root.Fail("GET", "/api/admin/dashboard/"+p+"?range="+r, nil, 200, badRange)
		}
	}
	for _, l := range []string{"0", "-1", "201", "abc", "1e3", "9223372036854775808", "NaN", "1.5"} {
		root.Fail("GET", "/api/admin/dashboard/top-users?limit="+l, nil, 200, badLimit)
	}
	for _, l := range []string{"1", "200", ""} {
		got := apptest.OKData[topUsers](root, "GET", "/api/admin/dashboard/top-users?limit="+l, nil)
		if got.Range != "7d" || got.Items == nil {
			t.Errorf("limit %q: %+v (items must be [] when empty)", l, got)
		}
	}
	charts := root.OK("GET", "/api/admin/dashboard/charts", nil)
	if string(charts.Data) != "[]" {
		t.Errorf("charts of an empty gateway = %s, want []", charts.Data)
	}

	// Roles: a user and an anonymous caller are refused.
	user, _ := e.NewUser("dash-user", 1)
	for _, p := range []string{"overview", "charts", "top-users"} {
		user.Fail("GET", "/api/admin/dashboard/"+p, nil, 200, "无权进行此操作,权限不足")
		e.Client().Fail("GET", "/api/admin/dashboard/"+p, nil, 401, "")
	}
	admin, _ := e.NewUser("dash-admin", 10)
	admin.OK("GET", "/api/admin/dashboard/overview?range=all", nil)
}
