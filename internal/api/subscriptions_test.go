package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/user"
)

// subscriptionInfo is a subscription view as tests read it.
type subscriptionInfo struct {
	ID          int64  `json:"id"`
	UserID      int64  `json:"user_id"`
	Username    string `json:"username"`
	PlanID      int64  `json:"plan_id"`
	PlanName    string `json:"plan_name"`
	OrderID     int64  `json:"order_id"`
	StartTime   int64  `json:"start_time"`
	EndTime     int64  `json:"end_time"`
	Status      int    `json:"status"`
	BillingType string `json:"billing_type"`
	Notes       string `json:"notes"`
	CreatedTime int64  `json:"created_time"`
	UpdatedTime int64  `json:"updated_time"`
}

func subscribe(t *testing.T, c *apptest.Client, body map[string]any) subscriptionInfo {
	t.Helper()
	return apptest.OKData[subscriptionInfo](c, "POST", "/api/subscription/", body)
}

func getSubscription(t *testing.T, c *apptest.Client, id int64) subscriptionInfo {
	t.Helper()
	return apptest.OKData[subscriptionInfo](c, "GET", apptest.Path("/api/subscription/%d", id), nil)
}

func subscriptionTotal(t *testing.T, c *apptest.Client) int64 {
	t.Helper()
	return c.OK("GET", "/api/subscription/", nil).Total
}

func TestSubscriptionCreate(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro", "duration_days", 30))
	_, uid := e.NewUser("sub1", user.RoleUser)

	before := time.Now().Unix()
	s := subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID, "notes": "gift\nfor testing"})
	if s.ID == 0 || s.UserID != uid || s.PlanID != p.ID || s.OrderID != 0 || s.Status != plan.SubActive ||
		s.BillingType != "token" || s.Notes != "gift\nfor testing" || s.Username != "sub1" || s.PlanName != "Pro" ||
		s.StartTime < before || s.EndTime != s.StartTime+30*86400 || s.CreatedTime == 0 {
		t.Fatalf("created %+v", s)
	}
	if got := getSubscription(t, root, s.ID); got != s {
		t.Fatalf("get %+v, created %+v", got, s)
	}
	// An explicit duration wins over the plan's; request billing.
	s2 := subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID, "duration_days": 7, "billing_type": "request"})
	if s2.EndTime != s2.StartTime+7*86400 || s2.BillingType != "request" {
		t.Fatalf("explicit duration %+v", s2)
	}
	s3 := subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID, "duration_days": -5})
	if s3.EndTime != s3.StartTime+30*86400 {
		t.Fatalf("negative duration %+v", s3)
	}

	_, gone := e.NewUser("gone1", user.RoleUser)
	root.OK("POST", "/api/user/manage", map[string]any{"username": "gone1", "action": "delete"})
	bad := []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"user_id": 999999, "plan_id": p.ID}, api.MsgUserNotFound},
		{map[string]any{"user_id": 0, "plan_id": p.ID}, api.MsgUserNotFound},
		{map[string]any{"user_id": gone, "plan_id": p.ID}, api.MsgUserNotFound},
		{map[string]any{"user_id": uid, "plan_id": 999999}, api.MsgPlanNotFound},
		{map[string]any{"user_id": uid, "plan_id": -1}, api.MsgPlanNotFound},
		{map[string]any{"user_id": uid, "plan_id": p.ID, "billing_type": "balance"}, plan.MsgBillingType},
		{map[string]any{"user_id": uid, "plan_id": p.ID, "duration_days": 3651}, plan.MsgSubDuration},
		{map[string]any{"user_id": uid, "plan_id": p.ID, "notes": "a\x00"}, "备注 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{map[string]any{"user_id": uid, "plan_id": p.ID, "notes": strings.Repeat("n", 501)}, "备注 不能超过 500 个字符"},
	}
	for _, tt := range bad {
		root.Fail("POST", "/api/subscription/", tt.body, http.StatusOK, tt.want)
	}
	root.Fail("POST", "/api/subscription/", `{"user_id":"x"}`, http.StatusOK, "无效的参数")
	if n := subscriptionTotal(t, root); n != 3 {
		t.Fatalf("%d subscriptions, want 3: failed creates saved rows", n)
	}
}

func TestSubscriptionUpdateDeleteAndPlanDelete(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	_, uid := e.NewUser("sub2", user.RoleUser)
	s := subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID})

	// The plan cannot go while the subscription is active.
	root.Fail("DELETE", apptest.Path("/api/plan/%d", p.ID), nil, http.StatusOK, api.MsgPlanInUse)

	bad := []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"id": s.ID, "status": 0}, plan.MsgSubStatusInvalid},
		{map[string]any{"id": s.ID, "status": 4}, plan.MsgSubStatusInvalid},
		{map[string]any{"id": s.ID, "end_time": s.StartTime}, plan.MsgEndTime},
		{map[string]any{"id": s.ID, "end_time": plan.MaxEndTime + 1}, plan.MsgEndTime},
		{map[string]any{"id": s.ID, "billing_type": "x"}, plan.MsgBillingType},
		{map[string]any{"id": s.ID, "notes": "\x00"}, "备注 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{map[string]any{"status": 3}, api.MsgIDRequired},
		{map[string]any{"id": 999999, "status": 3}, api.MsgSubscriptionNotFound},
	}
	for _, tt := range bad {
		root.Fail("PUT", "/api/subscription/", tt.body, http.StatusOK, tt.want)
	}
	if got := getSubscription(t, root, s.ID); got != s {
		t.Fatalf("failed updates changed %+v into %+v", s, got)
	}
	var up subscriptionInfo
	root.OK("PUT", "/api/subscription/", map[string]any{"id": s.ID, "notes": "moved", "billing_type": "request",
		"end_time": s.EndTime + 86400}).Decode(t, &up)
	if up.Notes != "moved" || up.BillingType != "request" || up.EndTime != s.EndTime+86400 || up.Status != 1 || up.StartTime != s.StartTime {
		t.Fatalf("updated %+v", up)
	}
	// Cancelled: the plan may go now.
	root.OK("PUT", "/api/subscription/", map[string]any{"id": s.ID, "status": plan.SubCancelled})
	if got := getSubscription(t, root, s.ID); got.Status != plan.SubCancelled {
		t.Fatalf("cancelled %+v", got)
	}
	root.OK("DELETE", apptest.Path("/api/plan/%d", p.ID), nil)
	root.Fail("DELETE", apptest.Path("/api/plan/%d", p.ID), nil, http.StatusOK, api.MsgPlanNotFound)
	if got := getSubscription(t, root, s.ID); got.PlanName != "" || got.PlanID != p.ID {
		t.Fatalf("subscription of a deleted plan %+v", got)
	}
	root.OK("DELETE", apptest.Path("/api/subscription/%d", s.ID), nil)
	root.Fail("DELETE", apptest.Path("/api/subscription/%d", s.ID), nil, http.StatusOK, api.MsgSubscriptionNotFound)
	root.Fail("GET", apptest.Path("/api/subscription/%d", s.ID), nil, http.StatusOK, api.MsgSubscriptionNotFound)
}

func TestSubscriptionListFiltersAndSearch(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	pro := createPlan(t, root, planBody("Pro"))
	max := createPlan(t, root, planBody("Max"))
	_, alice := e.NewUser("alice", user.RoleUser)
	_, bob := e.NewUser("bob", user.RoleUser)
	a1 := subscribe(t, root, map[string]any{"user_id": alice, "plan_id": pro.ID})
	a2 := subscribe(t, root, map[string]any{"user_id": alice, "plan_id": max.ID})
	b1 := subscribe(t, root, map[string]any{"user_id": bob, "plan_id": pro.ID})
	root.OK("PUT", "/api/subscription/", map[string]any{"id": a2.ID, "status": plan.SubCancelled})

	ids := func(path string) []int64 {
		t.Helper()
		var rows []subscriptionInfo
		r := root.OK("GET", path, nil)
		r.Decode(t, &rows)
		out := make([]int64, len(rows))
		for i, row := range rows {
			out[i] = row.ID
		}
		if int64(len(out)) != r.Total && !strings.Contains(path, "page_size") {
			t.Fatalf("%s: total %d, %d rows", path, r.Total, len(out))
		}
		return out
	}
	check := func(path string, want ...int64) {
		t.Helper()
		got := ids(path)
		if len(got) != len(want) {
			t.Fatalf("%s = %v, want %v", path, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s = %v, want %v", path, got, want)
			}
		}
	}
	check("/api/subscription/", b1.ID, a2.ID, a1.ID)
	check(apptest.Path("/api/subscription/?user_id=%d", alice), a2.ID, a1.ID)
	check(apptest.Path("/api/subscription/?user_id=%d&status=1", alice), a1.ID)
	check("/api/subscription/?status=3", a2.ID)
	check("/api/subscription/?p=1&page_size=2", a1.ID)
	check("/api/subscription/search?keyword=ali", a2.ID, a1.ID)
	check("/api/subscription/search?keyword=Max", a2.ID)
	check("/api/subscription/search?keyword=Pro", b1.ID, a1.ID)
	check("/api/subscription/search?keyword=nobody")
	root.Fail("GET", "/api/subscription/?status=9", nil, http.StatusOK, plan.MsgSubStatusInvalid)
	root.Fail("GET", "/api/subscription/?user_id=x", nil, http.StatusOK, "参数 user_id 必须是整数")

	// Expiry: an end in the past reads as expired at once, in the view and
	// in the status filters; the job then writes it down.
	past := time.Now().Unix() - 10
	e.ExecSQL(apptest.Path("UPDATE user_plans SET end_time = %d WHERE id = %d", past, b1.ID))
	if got := getSubscription(t, root, b1.ID); got.Status != plan.SubExpired {
		t.Fatalf("ended subscription reads status %d", got.Status)
	}
	check("/api/subscription/?status=2", b1.ID)
	check("/api/subscription/?status=1", a1.ID)
	n, err := e.App.ExpireSubscriptions(context.Background(), time.Now())
	if err != nil || n != 1 {
		t.Fatalf("expiry job: %d rows, %v", n, err)
	}
	if n, _ := e.App.ExpireSubscriptions(context.Background(), time.Now()); n != 0 {
		t.Fatalf("second run expired %d rows", n)
	}
	var raw struct {
		Rows []struct {
			UserPlan struct {
				ID     int64 `json:"id"`
				Status int   `json:"status"`
			} `json:"user_plan"`
		} `json:"rows"`
	}
	root.OK("GET", "/api/diag/subscriptions", nil).Decode(t, &raw)
	for _, r := range raw.Rows {
		if r.UserPlan.ID == b1.ID && r.UserPlan.Status != plan.SubExpired {
			t.Fatalf("stored status after the job: %d", r.UserPlan.Status)
		}
	}
	// Moving the end back into the future through PUT makes it active.
	root.OK("PUT", "/api/subscription/", map[string]any{"id": b1.ID, "status": 1, "end_time": time.Now().Unix() + 3600})
	if got := getSubscription(t, root, b1.ID); got.Status != plan.SubActive {
		t.Fatalf("renewed subscription reads status %d", got.Status)
	}
	// And an end set in the past through PUT reads expired at once.
	e.ExecSQL(apptest.Path("UPDATE user_plans SET start_time = %d WHERE id = %d", past-1000, b1.ID))
	root.OK("PUT", "/api/subscription/", map[string]any{"id": b1.ID, "end_time": past})
	if got := getSubscription(t, root, b1.ID); got.Status != plan.SubExpired {
		t.Fatalf("subscription ended by PUT reads status %d", got.Status)
	}
}

func TestExpiryJobBatches(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	_, uid := e.NewUser("many", user.RoleUser)
	for range 7 {
		subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID})
	}
	// Not yet: nothing ends before its end.
	if n, err := e.App.ExpireSubscriptions(context.Background(), time.Now()); err != nil || n != 0 {
		t.Fatalf("early run: %d, %v", n, err)
	}
	// Batches of 2: four transactions, every row written once.
	later := time.Now().Add(31 * 24 * time.Hour)
	n, err := e.App.Store.ExpireUserPlans(context.Background(), later.Unix(), 2)
	if err != nil || n != 7 {
		t.Fatalf("expired %d rows, %v; want 7", n, err)
	}
	n, err = e.App.ExpireSubscriptions(context.Background(), later)
	if err != nil || n != 0 {
		t.Fatalf("rerun expired %d, %v", n, err)
	}
	var rows []subscriptionInfo
	root.OK("GET", "/api/subscription/?status=2&page_size=100", nil).Decode(t, &rows)
	if len(rows) != 7 {
		t.Fatalf("%d expired rows, want 7", len(rows))
	}
	// The plan can be deleted once nothing active uses it.
	root.OK("DELETE", apptest.Path("/api/plan/%d", p.ID), nil)
}

func TestDiagSubscriptions(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	_, uid := e.NewUser("diag1", user.RoleUser)
	s := subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID, "notes": "n"})
	// Suspect rows written behind the API's back: no plan, an order id
	// without an order, a user that does not exist.
	e.ExecSQL(
		"INSERT INTO user_plans (id, user_id, plan_id, order_id, start_time, end_time, status, billing_type, notes, created_time, updated_time) "+
			apptest.Path("VALUES (7, %d, 0, 0, 1, 2, 1, 'token', '', 1, 1)", uid),
		"INSERT INTO user_plans (id, user_id, plan_id, order_id, start_time, end_time, status, billing_type, notes, created_time, updated_time) "+
			apptest.Path("VALUES (8, 777777, -3, 42, 1, 2, 1, 'token', '', 1, 1)"),
	)
	var d struct {
		TotalUserPlans int `json:"total_user_plans"`
		MissingPlanID  int `json:"missing_plan_id"`
		Rows           []struct {
			UserPlan    map[string]any `json:"user_plan"`
			OrderNo     *string        `json:"order_no"`
			OrderPlanID *int64         `json:"order_plan_id"`
			OrderType   *int           `json:"order_type"`
			User        *struct {
				ID          int64  `json:"id"`
				Username    string `json:"username"`
				DisplayName string `json:"display_name"`
				Email       string `json:"email"`
				Role        int    `json:"role"`
				Status      int    `json:"status"`
			} `json:"user"`
		} `json:"rows"`
	}
	root.OK("GET", "/api/diag/subscriptions", nil).Decode(t, &d)
	if d.TotalUserPlans != 3 || d.MissingPlanID != 2 || len(d.Rows) != 3 {
		t.Fatalf("diag %+v", d)
	}
	first := d.Rows[0] // ids ascending: 7, 8, then the API's row (50 + …)
	if first.UserPlan["id"] != float64(7) || first.User == nil || first.User.Username != "diag1" || first.User.Role != 1 || first.User.Status != 1 {
		t.Fatalf("row 0 %+v user %+v", first.UserPlan, first.User)
	}
	if d.Rows[1].User != nil || d.Rows[1].UserPlan["order_id"] != float64(42) || *d.Rows[1].OrderNo != "" || *d.Rows[1].OrderPlanID != 0 || *d.Rows[1].OrderType != 0 {
		t.Fatalf("row 1 %+v", d.Rows[1])
	}
	last := d.Rows[2].UserPlan
	for _, k := range []string{"id", "user_id", "plan_id", "order_id", "start_time", "end_time", "status", "billing_type", "notes", "created_time", "updated_time"} {
		if _, ok := last[k]; !ok {
			t.Fatalf("user_plan lacks %s: %v", k, last)
		}
	}
	if last["id"] != float64(s.ID) || last["notes"] != "n" {
		t.Fatalf("row 2 %v", last)
	}
	// At most 100 rows.
	for range 101 {
		subscribe(t, root, map[string]any{"user_id": uid, "plan_id": p.ID})
	}
	root.OK("GET", "/api/diag/subscriptions", nil).Decode(t, &d)
	if d.TotalUserPlans != 100 || len(d.Rows) != 100 || d.MissingPlanID != 2 {
		t.Fatalf("diag after 104 rows: total %d, %d rows, missing %d", d.TotalUserPlans, len(d.Rows), d.MissingPlanID)
	}
}

// TestPlanDeleteRacesGrants: a plan deleted while subscriptions to it are
// being created never leaves an active subscription to a missing plan.
func TestPlanDeleteRacesGrants(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	_, uid := e.NewUser("racer", user.RoleUser)
	for round := range 3 {
		p := createPlan(t, root, planBody(apptest.Path("P%d", round)))
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				root.Do("POST", "/api/subscription/", map[string]any{"user_id": uid, "plan_id": p.ID})
			}()
		}
		deleted := root.Do("DELETE", apptest.Path("/api/plan/%d", p.ID), nil).Success
		wg.Wait()
		var rows []subscriptionInfo
		root.OK("GET", apptest.Path("/api/subscription/?user_id=%d&status=1&page_size=100", uid), nil).Decode(t, &rows)
		for _, s := range rows {
			if s.PlanID == p.ID && deleted {
				t.Fatalf("round %d: plan deleted but subscription %d to it is active", round, s.ID)
			}
		}
	}
}

// TestPlanMessagesInEnglish: the formatted plan messages render in English
// with their data kept.
func TestPlanMessagesInEnglish(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": "en"})
	root.Fail("POST", "/api/plan/", planBody("X", "default_model", "claude"), http.StatusOK,
		`default model "claude" must be a model configured in model_limits`)
	root.Fail("POST", "/api/plan/", planBody("X", "model_limits", `{"m":{"token_week":-1}}`), http.StatusOK,
		`model "m" in model_limits: token_week must not be negative`)
	root.Fail("POST", "/api/plan/", planBody("a\x00"), http.StatusOK,
		"plan name contains invalid characters: it must be UTF-8 text without NUL or control characters")
}
