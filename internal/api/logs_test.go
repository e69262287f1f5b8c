package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
)

// logRow is a log record as the API shows it.
type logRow = apptest.LogInfo

type logStat struct {
	Quota            int64 `json:"quota"`
	RequestCount     int64 `json:"request_count"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// insertLogs writes rows through the store, as the relay will, and returns
// them with their ids.
func insertLogs(t *testing.T, e *apptest.Env, rows ...store.Log) []store.Log {
	t.Helper()
	if err := e.App.Store.InsertBatch(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// logIDs lists the ids of the logs a GET returns, in order, and the total.
func logIDs(t *testing.T, c *apptest.Client, path string) ([]int64, int64) {
	t.Helper()
	var rows []logRow
	r := c.OK("GET", path, nil)
	r.Decode(t, &rows)
	ids := make([]int64, len(rows))
	for i, l := range rows {
		ids[i] = l.ID
	}
	return ids, r.Total
}

func wantLogs(t *testing.T, c *apptest.Client, path string, want ...store.Log) {
	t.Helper()
	got, total := logIDs(t, c, path)
	ids := make([]int64, len(want))
	for i, l := range want {
		ids[i] = l.ID
	}
	if !slices.Equal(got, ids) || total != int64(len(want)) {
		t.Errorf("GET %s = %v (total %d), want %v", path, got, total, ids)
	}
}

const base = int64(1_700_000_000)

// logFixture is two users' logs: alice (A) and bob (B), consume logs on two
// models, tokens and channels, plus one top-up.
type logFixture struct {
	e                  *apptest.Env
	alice, bob         *apptest.Client
	aliceID, bobID     int64
	l1, l2, l3, l4, l5 store.Log
}

func newLogFixture(t *testing.T) *logFixture {
	e := apptest.New(t)
	f := &logFixture{e: e}
	f.alice, f.aliceID = e.NewUser("alice", 1)
	f.bob, f.bobID = e.NewUser("bob", 1)
	// Start from no logs: the first start's system log would be the newest.
	e.Root().OK("DELETE", fmt.Sprintf("/api/log/?target_timestamp=%d", time.Now().Unix()+60), nil)
	rows := insertLogs(t, e,
		store.Log{UserID: f.aliceID, Username: "alice", CreatedAt: base + 10, Type: store.LogConsume, ModelName: "gpt-4o",
			TokenName: "ta", ChannelID: 1, Group: "default", Quota: 100, PromptTokens: 10, CompletionTokens: 20,
			CachedTokens: 5, RequestID: "req-a1", ElapsedTime: 1500, IsStream: true, BillingSource: 1, PlanID: 7,
			SessionKey: "sess-1", Content: "quota 100% used"},
		store.Log{UserID: f.aliceID, Username: "alice", CreatedAt: base + 20, Type: store.LogConsume, ModelName: "claude-3",
			TokenName: "ta", ChannelID: 2, Group: "vip", Quota: 200, PromptTokens: 30, CompletionTokens: 40},
		store.Log{UserID: f.bobID, Username: "bob", CreatedAt: base + 30, Type: store.LogConsume, ModelName: "gpt-4o",
			TokenName: "tb", ChannelID: 1, Group: "default", Quota: 400, PromptTokens: 50, CompletionTokens: 60},
		store.Log{UserID: f.bobID, Username: "bob", CreatedAt: base + 40, Type: store.LogTopup, Quota: 1000, Content: "bob topup"},
		// Same second as l2: the later id comes first.
		store.Log{UserID: f.aliceID, Username: "alice", CreatedAt: base + 20, Type: store.LogConsume, ModelName: "gpt-4o",
			TokenName: "tx", ChannelID: 2, Group: "default", Quota: 800, PromptTokens: 70, CompletionTokens: 80},
	)
	f.l1, f.l2, f.l3, f.l4, f.l5 = rows[0], rows[1], rows[2], rows[3], rows[4]
	return f
}

func TestLogListFiltersAndOrder(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	root := f.e.Root()
	wantLogs(t, root, "/api/log/", f.l4, f.l3, f.l5, f.l2, f.l1)
	wantLogs(t, root, "/api/log/?type=0", f.l4, f.l3, f.l5, f.l2, f.l1)
	wantLogs(t, root, "/api/log/?type=2", f.l3, f.l5, f.l2, f.l1)
	wantLogs(t, root, "/api/log/?type=1", f.l4)
	wantLogs(t, root, "/api/log/?type=3")
	wantLogs(t, root, apptest.Path("/api/log/?start_timestamp=%d", base+20), f.l4, f.l3, f.l5, f.l2)
	wantLogs(t, root, apptest.Path("/api/log/?end_timestamp=%d", base+20), f.l5, f.l2, f.l1)
	wantLogs(t, root, apptest.Path("/api/log/?start_timestamp=%d&end_timestamp=%d", base+20, base+20), f.l5, f.l2)
	wantLogs(t, root, "/api/log/?model_name=gpt-4o", f.l3, f.l5, f.l1)
	wantLogs(t, root, "/api/log/?model_name=gpt") // exact match, not a substring
	wantLogs(t, root, "/api/log/?username=bob", f.l4, f.l3)
	wantLogs(t, root, "/api/log/?token_name=ta", f.l2, f.l1)
	wantLogs(t, root, "/api/log/?channel=2", f.l5, f.l2)
	wantLogs(t, root, "/api/log/?group=vip", f.l2)
	wantLogs(t, root, "/api/log/?username=alice&model_name=gpt-4o&type=2", f.l5, f.l1)

	root.Fail("GET", "/api/log/?type=6", nil, http.StatusOK, api.MsgLogTypeInvalid) // 5 is error logs
	root.Fail("GET", "/api/log/?type=-1", nil, http.StatusOK, api.MsgLogTypeInvalid)
	root.Fail("GET", "/api/log/?type=x", nil, http.StatusOK, "参数 type 必须是整数")
	root.Fail("GET", "/api/log/?start_timestamp=yesterday", nil, http.StatusOK, "参数 start_timestamp 必须是整数")
}

func TestLogRecordFieldsAndPages(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	root := f.e.Root()
	var rows []logRow
	root.OK("GET", apptest.Path("/api/log/?end_timestamp=%d", base+10), nil).Decode(t, &rows)
	want := logRow{ID: f.l1.ID, UserID: f.aliceID, CreatedAt: base + 10, Type: 2, Content: "quota 100% used",
		Username: "alice", TokenName: "ta", ModelName: "gpt-4o", Group: "default", Quota: 100, PromptTokens: 10,
		CompletionTokens: 20, CachedTokens: 5, ChannelID: 1, RequestID: "req-a1", ElapsedTime: 1500, IsStream: true,
		BillingSource: 1, PlanID: 7, SessionKey: "sess-1"}
	if len(rows) != 1 || rows[0] != want {
		t.Fatalf("log = %+v, want %+v", rows, want)
	}

	for p, want := range [][]store.Log{{f.l4, f.l3}, {f.l5, f.l2}, {f.l1}, {}} {
		got, total := logIDs(t, root, apptest.Path("/api/log/?page_size=2&p=%d", p))
		if len(got) != len(want) || total != 5 || (len(want) > 0 && got[0] != want[0].ID) {
			t.Errorf("page %d = %v (total %d), want %d rows of 5", p, got, total, len(want))
		}
	}
	// Pages of a filtered list count only the matching rows.
	got, total := logIDs(t, root, "/api/log/?type=2&page_size=2&p=1")
	if !slices.Equal(got, []int64{f.l2.ID, f.l1.ID}) || total != 4 {
		t.Errorf("consume page 1 = %v (total %d)", got, total)
	}
	// Without page_size a page holds 10 rows.
	var many []store.Log
	for i := range 12 {
		many = append(many, store.Log{UserID: f.bobID, Username: "bob", CreatedAt: base + 100 + int64(i), Type: store.LogSystem})
	}
	insertLogs(t, f.e, many...)
	if got, total := logIDs(t, root, "/api/log/"); len(got) != 10 || total != 17 {
		t.Errorf("default page = %d rows of %d, want 10 of 17", len(got), total)
	}
}

func TestLogSearch(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	root := f.e.Root()
	wantLogs(t, root, "/api/log/search?keyword=bob", f.l4, f.l3)       // username and content
	wantLogs(t, root, "/api/log/search?keyword=claude", f.l2)          // model name
	wantLogs(t, root, "/api/log/search?keyword=tx", f.l5)              // token name
	wantLogs(t, root, "/api/log/search?keyword=topup", f.l4)           // content
	wantLogs(t, root, "/api/log/search?keyword=req-a", f.l1)           // request id
	wantLogs(t, root, "/api/log/search?keyword=bob&type=2", f.l3)      // with a type
	wantLogs(t, root, "/api/log/search?keyword=100%25", f.l1)          // % is literal
	wantLogs(t, root, "/api/log/search?keyword=%25%25")                // and matches no more
	wantLogs(t, root, "/api/log/search?keyword=nothing-like-this")     // no match
	wantLogs(t, root, "/api/log/search", f.l4, f.l3, f.l5, f.l2, f.l1) // no keyword: all
	root.Fail("GET", "/api/log/search?type=9", nil, http.StatusOK, api.MsgLogTypeInvalid)
}

func TestLogStat(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	root := f.e.Root()
	cases := []struct {
		path string
		want logStat
	}{
		// The top-up l4 never counts: stats are about consumption.
		{"/api/log/stat", logStat{Quota: 1500, RequestCount: 4, PromptTokens: 160, CompletionTokens: 200}},
		{"/api/log/stat?type=1", logStat{Quota: 1500, RequestCount: 4, PromptTokens: 160, CompletionTokens: 200}},
		{"/api/log/stat?model_name=gpt-4o", logStat{Quota: 1300, RequestCount: 3, PromptTokens: 130, CompletionTokens: 160}},
		{"/api/log/stat?username=bob", logStat{Quota: 400, RequestCount: 1, PromptTokens: 50, CompletionTokens: 60}},
		{"/api/log/stat?token_name=ta&channel=2", logStat{Quota: 200, RequestCount: 1, PromptTokens: 30, CompletionTokens: 40}},
		{"/api/log/stat?group=default", logStat{Quota: 1300, RequestCount: 3, PromptTokens: 130, CompletionTokens: 160}},
		{apptest.Path("/api/log/stat?start_timestamp=%d&end_timestamp=%d", base+20, base+30),
			logStat{Quota: 1400, RequestCount: 3, PromptTokens: 150, CompletionTokens: 180}},
		{"/api/log/stat?model_name=none", logStat{}},
	}
	for _, c := range cases {
		var got logStat
		root.OK("GET", c.path, nil).Decode(t, &got)
		if got != c.want {
			t.Errorf("GET %s = %+v, want %+v", c.path, got, c.want)
		}
	}
	root.Fail("GET", "/api/log/stat?channel=x", nil, http.StatusOK, "参数 channel 必须是整数")
}

// TestSelfLogsIsolation: a user sees only their own logs, whatever filter,
// keyword or username they send.
func TestSelfLogsIsolation(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	wantLogs(t, f.alice, "/api/log/self", f.l5, f.l2, f.l1)
	wantLogs(t, f.alice, "/api/log/self?username=bob", f.l5, f.l2, f.l1)
	wantLogs(t, f.alice, "/api/log/self?channel=1", f.l5, f.l2, f.l1) // channel is ignored for users
	wantLogs(t, f.alice, "/api/log/self?model_name=gpt-4o", f.l5, f.l1)
	wantLogs(t, f.alice, "/api/log/self?token_name=ta&group=vip", f.l2)
	wantLogs(t, f.alice, apptest.Path("/api/log/self?start_timestamp=%d&end_timestamp=%d", base+15, base+40), f.l5, f.l2)
	if got, total := logIDs(t, f.alice, "/api/log/self?page_size=1&p=1"); !slices.Equal(got, []int64{f.l2.ID}) || total != 3 {
		t.Errorf("alice page 1 = %v (total %d)", got, total)
	}
	wantLogs(t, f.alice, "/api/log/self?type=1")
	wantLogs(t, f.bob, "/api/log/self?type=1", f.l4)
	wantLogs(t, f.bob, "/api/log/self?username=alice", f.l4, f.l3)

	wantLogs(t, f.alice, "/api/log/self/search?keyword=bob")
	wantLogs(t, f.alice, "/api/log/self/search?keyword=gpt", f.l5, f.l1)
	wantLogs(t, f.alice, "/api/log/self/search?keyword=topup")
	wantLogs(t, f.bob, "/api/log/self/search?keyword=o", f.l4, f.l3) // bob, gpt-4o, topup
	wantLogs(t, f.bob, "/api/log/self/search?keyword=alice")

	for path, want := range map[string]logStat{
		"/api/log/self/stat":                          {Quota: 1100, RequestCount: 3, PromptTokens: 110, CompletionTokens: 140},
		"/api/log/self/stat?username=bob":             {Quota: 1100, RequestCount: 3, PromptTokens: 110, CompletionTokens: 140},
		"/api/log/self/stat?channel=1":                {Quota: 1100, RequestCount: 3, PromptTokens: 110, CompletionTokens: 140},
		"/api/log/self/stat?model_name=gpt-4o":        {Quota: 900, RequestCount: 2, PromptTokens: 80, CompletionTokens: 100},
		"/api/log/self/stat?model_name=no-such-model": {},
	} {
		var got logStat
		f.alice.OK("GET", path, nil).Decode(t, &got)
		if got != want {
			t.Errorf("alice GET %s = %+v, want %+v", path, got, want)
		}
	}
	var got logStat
	f.bob.OK("GET", "/api/log/self/stat?username=alice", nil).Decode(t, &got)
	if got != (logStat{Quota: 400, RequestCount: 1, PromptTokens: 50, CompletionTokens: 60}) {
		t.Errorf("bob self stat = %+v", got)
	}
}

func TestLogRoleBoundaries(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	for _, path := range []string{"/api/log/", "/api/log/search?keyword=bob", "/api/log/stat", "/api/log/?username=bob"} {
		f.alice.Fail("GET", path, nil, http.StatusOK, api.MsgNoPermission)
	}
	f.alice.Fail("DELETE", apptest.Path("/api/log/?target_timestamp=%d", base+100), nil, http.StatusOK, api.MsgNoPermission)
	anon := f.e.Client()
	for _, path := range []string{"/api/log/self", "/api/log/self/search", "/api/log/self/stat", "/api/user/dashboard", "/api/log/"} {
		anon.Fail("GET", path, nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	}
	// An admin reads every user's logs.
	admin, _ := f.e.NewUser("adam", 10)
	wantLogs(t, admin, "/api/log/?username=bob", f.l4, f.l3)
	// Nothing was deleted by the refused call.
	wantLogs(t, f.e.Root(), "/api/log/", f.l4, f.l3, f.l5, f.l2, f.l1)
}

// TestAdminActionsWriteLogs: a top-up writes a type 1 log and an admin quota
// change a type 3 log, both on the target user.
func TestAdminActionsWriteLogs(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	carol, carolID := e.NewUser("carol", 1)
	before := time.Now().Unix()
	root.OK("POST", "/api/topup", map[string]any{"user_id": carolID, "quota": 500, "remark": "gift"})
	root.OK("PUT", "/api/user/", map[string]any{"id": carolID, "quota": 800, "quota_before": 500})
	// An update that leaves the quota alone writes nothing.
	root.OK("PUT", "/api/user/", map[string]any{"id": carolID, "display_name": "Carol"})

	var rows []logRow
	r := carol.OK("GET", "/api/log/self", nil)
	r.Decode(t, &rows)
	if r.Total != 2 || len(rows) != 2 {
		t.Fatalf("carol's logs = %s", r.Raw)
	}
	admin, topup := rows[0], rows[1]
	if topup.Type != store.LogTopup || topup.UserID != carolID || topup.Username != "carol" || topup.Quota != 500 ||
		topup.Content != "管理员 root 充值 ¥0.0005,备注: gift" || topup.CreatedAt < before {
		t.Errorf("top-up log = %+v", topup)
	}
	if admin.Type != store.LogAdmin || admin.UserID != carolID || admin.Username != "carol" ||
		!strings.Contains(admin.Content, "从 ¥0.0005 修改为 ¥0.0008") {
		t.Errorf("admin log = %+v", admin)
	}
	wantIDs := func(path string, want ...int64) {
		t.Helper()
		got, _ := logIDs(t, root, path)
		if !slices.Equal(got, want) {
			t.Errorf("GET %s = %v, want %v", path, got, want)
		}
	}
	wantIDs("/api/log/?type=1&username=carol", topup.ID)
	wantIDs("/api/log/?type=3", admin.ID)
	wantIDs("/api/log/search?keyword=gift", topup.ID)
	// Neither is consumption.
	var st logStat
	carol.OK("GET", "/api/log/self/stat", nil).Decode(t, &st)
	if st != (logStat{}) {
		t.Errorf("stat after admin actions = %+v", st)
	}
}

func TestDeleteLogs(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	root := f.e.Root()
	for _, q := range []string{"", "?target_timestamp=", "?target_timestamp=0", "?target_timestamp=-5", "?target_timestamp=soon"} {
		root.Fail("DELETE", "/api/log/"+q, nil, http.StatusOK, api.MsgTargetTimestampNeeded)
	}
	wantLogs(t, root, "/api/log/", f.l4, f.l3, f.l5, f.l2, f.l1)

	var n int64
	root.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", base+30), nil).Decode(t, &n)
	if n != 3 { // l1, l2, l5; l3 is exactly at the target and stays
		t.Fatalf("deleted %d, want 3", n)
	}
	wantLogs(t, root, "/api/log/", f.l4, f.l3)
	root.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", base+30), nil).Decode(t, &n)
	if n != 0 {
		t.Fatalf("second delete removed %d", n)
	}
	admin, _ := f.e.NewUser("adam", 10)
	admin.OK("DELETE", apptest.Path("/api/log/?target_timestamp=%d", base+1000), nil).Decode(t, &n)
	if n != 2 {
		t.Fatalf("admin delete removed %d, want 2", n)
	}
	wantLogs(t, root, "/api/log/")
}

type usageRow struct {
	Day              string `json:"day"`
	ModelName        string `json:"model_name"`
	RequestCount     int64  `json:"request_count"`
	Quota            int64  `json:"quota"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

func TestUserDashboard(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	alice, aliceID := e.NewUser("alice", 1)
	bob, bobID := e.NewUser("bob", 1)
	now := time.Now().Unix()
	today := now - now%86400
	first := today - 6*86400 // the oldest day of the window
	use := func(userID, at int64, model string, quota int64) store.Log {
		return store.Log{UserID: userID, CreatedAt: at, Type: store.LogConsume, ModelName: model,
			Quota: quota, PromptTokens: quota / 10, CompletionTokens: quota / 5}
	}
	insertLogs(t, e,
		use(aliceID, today, "gpt-4o", 100),
		use(aliceID, today, "gpt-4o", 200),
		use(aliceID, today, "claude-3", 50),
		use(aliceID, today-1, "gpt-4o", 1000), // 23:59:59 yesterday
		use(aliceID, today-86400, "gpt-4o", 10),
		use(aliceID, first, "claude-3", 70),
		use(aliceID, first-1, "claude-3", 5000),     // before the window
		use(aliceID, today-8*86400, "gpt-4o", 9000), // long ago
		store.Log{UserID: aliceID, CreatedAt: today, Type: store.LogTopup, ModelName: "gpt-4o", Quota: 7000},
		use(bobID, today, "gpt-4o", 300),
	)
	day := func(ts int64) string { return time.Unix(ts, 0).UTC().Format("2006-01-02") }
	want := []usageRow{
		{Day: day(first), ModelName: "claude-3", RequestCount: 1, Quota: 70, PromptTokens: 7, CompletionTokens: 14},
		{Day: day(today - 1), ModelName: "gpt-4o", RequestCount: 2, Quota: 1010, PromptTokens: 101, CompletionTokens: 202},
		{Day: day(today), ModelName: "claude-3", RequestCount: 1, Quota: 50, PromptTokens: 5, CompletionTokens: 10},
		{Day: day(today), ModelName: "gpt-4o", RequestCount: 2, Quota: 300, PromptTokens: 30, CompletionTokens: 60},
	}
	var got []usageRow
	alice.OK("GET", "/api/user/dashboard", nil).Decode(t, &got)
	if !slices.Equal(got, want) {
		t.Errorf("alice dashboard = %+v\nwant %+v", got, want)
	}
	bob.OK("GET", "/api/user/dashboard", nil).Decode(t, &got)
	if !slices.Equal(got, []usageRow{{Day: day(today), ModelName: "gpt-4o", RequestCount: 1, Quota: 300, PromptTokens: 30, CompletionTokens: 60}}) {
		t.Errorf("bob dashboard = %+v", got)
	}
	// No usage is an empty list, not null.
	carol, _ := e.NewUser("carol", 1)
	if r := carol.OK("GET", "/api/user/dashboard", nil); string(r.Data) != "[]" {
		t.Errorf("empty dashboard data = %s", r.Data)
	}
}

// TestSelfLogsHideChannel: which upstream channel served a call is the
// operator's business; a user's own logs show channel_id 0, the admin's
// views the channel.
func TestSelfLogsHideChannel(t *testing.T) {
	apptest.Parallel(t)
	f := newLogFixture(t)
	for _, path := range []string{"/api/log/self", "/api/log/self/search", "/api/log/self/search?keyword=gpt"} {
		var rows []logRow
		f.alice.OK("GET", path, nil).Decode(t, &rows)
		if len(rows) == 0 {
			t.Fatalf("GET %s: no rows", path)
		}
		for _, l := range rows {
			if l.ChannelID != 0 {
				t.Errorf("GET %s: log %d shows channel_id %d to its user", path, l.ID, l.ChannelID)
			}
		}
	}
	for _, path := range []string{"/api/log/?username=alice", "/api/log/search?keyword=alice"} {
		var rows []logRow
		f.e.Root().OK("GET", path, nil).Decode(t, &rows)
		channels := map[int64]bool{}
		for _, l := range rows {
			channels[l.ChannelID] = true
		}
		if !channels[1] || !channels[2] || channels[0] {
			t.Errorf("GET %s: admin sees channels %v, want 1 and 2", path, channels)
		}
	}
}
