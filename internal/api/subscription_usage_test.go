package api_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/plan"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/user"
)

// usageInfo is a subscription usage view as tests read it.
type usageInfo struct {
	subscriptionInfo
	LifetimeRequests int64 `json:"lifetime_requests"`
	LifetimeTokens   int64 `json:"lifetime_tokens"`
	Models           []struct {
		Model  string      `json:"model"`
		Listed bool        `json:"listed"`
		Limits []limitInfo `json:"limits"`
	} `json:"models"`
}

type limitInfo struct {
	Name        string `json:"name"`
	WindowHours int64  `json:"window_hours"`
	Limit       int64  `json:"limit"`
	Used        int64  `json:"used"`
	Remaining   int64  `json:"remaining"`
	ResetTime   int64  `json:"reset_time"`
}

// limitsOf is the limits of model in u; ok is false when u has no such model.
func (u usageInfo) limitsOf(model string) (limits []limitInfo, listed, ok bool) {
	for _, m := range u.Models {
		if m.Model == model {
			return m.Limits, m.Listed, true
		}
	}
	return nil, false, false
}

// ruleOf is model's rule in a plan's stored limits, as the counters keep it.
func ruleOf(t *testing.T, p planInfo, model string) planlimit.Rule {
	t.Helper()
	limits, problem := plan.ParseLimits(p.ModelLimits)
	if problem != nil {
		t.Fatal(problem)
	}
	return limits[model].Counted(p.Tokens)
}

// use reserves one call of model on subscription sub at now and settles it
// to tokens (settle false leaves the reservation open).
func use(t *testing.T, e *apptest.Env, sub int64, model string, rule planlimit.Rule, now time.Time, estimate, tokens int64, settle bool) store.UsageReservation {
	t.Helper()
	ctx := context.Background()
	r, err := e.App.Store.ReserveUsage(ctx, store.UsageOp{SubscriptionID: sub, Model: model, Rule: rule, Tokens: estimate, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if settle {
		if ok, err := e.App.Store.SettleUsage(ctx, r, tokens); err != nil || !ok {
			t.Fatalf("settle: %v %v", ok, err)
		}
	}
	return r
}

func selfUsage(t *testing.T, c *apptest.Client) []usageInfo {
	t.Helper()
	return apptest.OKData[[]usageInfo](c, "GET", "/api/subscription/self", nil)
}

func usageOf(t *testing.T, c *apptest.Client, id int64) usageInfo {
	t.Helper()
	return apptest.OKData[usageInfo](c, "GET", apptest.Path("/api/subscription/%d/usage", id), nil)
}

const everyLimit = `{"gpt-4o":{"period_h":2,"request_period":10,"request_week":20,"request_month":30,` +
	`"token_period":1000,"token_week":2000,"token_month":3000},"mini":{}}`

func TestSubscriptionSelfUsage(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Every", "model_limits", everyLimit, "default_model", "mini", "tokens", 5000))
	alice, aliceID := e.NewUser("alice9", user.RoleUser)
	_, bobID := e.NewUser("bob9", user.RoleUser)

	long := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID, "duration_days": 30})
	short := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID, "duration_days": 7})
	cancelled := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID})
	root.OK("PUT", "/api/subscription/", map[string]any{"id": cancelled.ID, "status": plan.SubCancelled})
	expired := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID})
	past := time.Now().Unix() - 100
	e.ExecSQL(apptest.Path("UPDATE user_plans SET start_time = %d, end_time = %d WHERE id = %d", past-1000, past, expired.ID))
	subscribe(t, root, map[string]any{"user_id": bobID, "plan_id": p.ID})

	// Nothing used yet: every configured limit, all remaining, no reset.
	got := selfUsage(t, alice)
	if len(got) != 2 || got[0].ID != short.ID || got[1].ID != long.ID {
		t.Fatalf("self lists %+v, want subscriptions %d then %d", got, short.ID, long.ID)
	}
	if got[0].PlanName != "Every" || got[0].Status != plan.SubActive || got[0].UserID != aliceID {
		t.Fatalf("self view %+v", got[0].subscriptionInfo)
	}
	limits, listed, ok := got[1].limitsOf("gpt-4o")
	if !ok || !listed || len(limits) != 7 {
		t.Fatalf("unused gpt-4o limits %+v", got[1].Models)
	}
	for _, l := range limits {
		if l.Used != 0 || l.Remaining != l.Limit || l.ResetTime != 0 {
			t.Fatalf("unused limit %+v", l)
		}
	}

	// Two calls on the short subscription: 150 and 50 tokens.
	rule := ruleOf(t, p, "gpt-4o")
	now := time.Now()
	use(t, e, short.ID, "gpt-4o", rule, now, 100, 150, true)
	use(t, e, short.ID, "gpt-4o", rule, now, 100, 50, true)

	reset := func(w planlimit.Window) int64 {
		return rule.ResetAt(w, planlimit.BucketStart(now, rule.Bucket(w))).Unix()
	}
	want := []limitInfo{
		{"request_period", 2, 10, 2, 8, reset(planlimit.Period)},
		{"request_week", 168, 20, 2, 18, reset(planlimit.Week)},
		{"request_month", 720, 30, 2, 28, reset(planlimit.Month)},
		{"token_period", 2, 1000, 200, 800, reset(planlimit.Period)},
		{"token_week", 168, 2000, 200, 1800, reset(planlimit.Week)},
		{"token_month", 720, 3000, 200, 2800, reset(planlimit.Month)},
		{"tokens", 0, 5000, 200, 4800, 0},
	}
	got = selfUsage(t, alice)
	if len(got) != 2 || got[0].ID != short.ID {
		t.Fatalf("self lists %+v", got)
	}
	if got[0].LifetimeRequests != 2 || got[0].LifetimeTokens != 200 {
		t.Fatalf("lifetime %d requests %d tokens, want 2 and 200", got[0].LifetimeRequests, got[0].LifetimeTokens)
	}
	if limits, _, _ := got[0].limitsOf("gpt-4o"); !slices.Equal(limits, want) {
		t.Fatalf("gpt-4o limits\n got %+v\nwant %+v", limits, want)
	}
	// mini has no limit of its own; the plan's lifetime allowance binds it too.
	if limits, listed, _ := got[0].limitsOf("mini"); !listed || !slices.Equal(limits, []limitInfo{{"tokens", 0, 5000, 200, 4800, 0}}) {
		t.Fatalf("mini limits %+v", limits)
	}
	// The other subscription's counters are its own.
	if limits, _, _ := got[1].limitsOf("gpt-4o"); limits[0].Used != 0 || got[1].LifetimeTokens != 0 {
		t.Fatalf("long subscription counts the short one's use: %+v", got[1])
	}

	// Bob sees only his own; an admin's self is their own too (none).
	if bob := selfUsage(t, e.Client().Bearer(apptest.RootAccessToken)); len(bob) != 0 {
		t.Fatalf("root's self %+v", bob)
	}
}

func TestSubscriptionUsageOwnership(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro"))
	alice, aliceID := e.NewUser("alice10", user.RoleUser)
	bob, _ := e.NewUser("bob10", user.RoleUser)
	admin, _ := e.NewUser("admin10", user.RoleAdmin)
	s := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID})
	use(t, e, s.ID, "gpt-4o", ruleOf(t, p, "gpt-4o"), time.Now(), 7, 7, true)

	path := apptest.Path("/api/subscription/%d/usage", s.ID)
	for _, c := range []*apptest.Client{alice, admin, root} {
		u := usageOf(t, c, s.ID)
		if u.ID != s.ID || u.LifetimeRequests != 1 || u.LifetimeTokens != 7 {
			t.Fatalf("usage view %+v", u)
		}
		if limits, _, _ := u.limitsOf("gpt-4o"); len(limits) == 0 || limits[0].Name != "request_period" || limits[0].Used != 1 {
			t.Fatalf("gpt-4o limits %+v", limits)
		}
	}
	// Another user learns nothing: the answer of a missing id.
	r := bob.Fail("GET", path, nil, http.StatusOK, api.MsgSubscriptionNotFound)
	missing := bob.Fail("GET", "/api/subscription/999999/usage", nil, http.StatusOK, api.MsgSubscriptionNotFound)
	if string(r.Raw) != string(missing.Raw) {
		t.Fatalf("another's subscription answers %s, a missing one %s", r.Raw, missing.Raw)
	}
	bob.Fail("GET", "/api/subscription/abc/usage", nil, http.StatusOK, "无效的ID")
	e.Client().Fail("GET", path, nil, http.StatusUnauthorized, "")
	// A user still cannot read subscriptions by id without /usage.
	alice.Fail("GET", apptest.Path("/api/subscription/%d", s.ID), nil, http.StatusOK, api.MsgNoPermission)

	// Cancelled: gone from self, still readable by its owner with its status.
	root.OK("PUT", "/api/subscription/", map[string]any{"id": s.ID, "status": plan.SubCancelled})
	if got := selfUsage(t, alice); len(got) != 0 {
		t.Fatalf("self lists a cancelled subscription: %+v", got)
	}
	if u := usageOf(t, alice, s.ID); u.Status != plan.SubCancelled || u.LifetimeRequests != 1 {
		t.Fatalf("cancelled usage view %+v", u)
	}
	// Expired by its end time, before the expiry job: read as expired.
	past := time.Now().Unix() - 100
	e.ExecSQL(apptest.Path("UPDATE user_plans SET status = 1, start_time = %d, end_time = %d WHERE id = %d", past-1000, past, s.ID))
	if u := usageOf(t, alice, s.ID); u.Status != plan.SubExpired {
		t.Fatalf("expired usage view status %d", u.Status)
	}
}

func TestSubscriptionUsageAfterPlanChange(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro", "model_limits", `{"gpt-4o":{"request_period":10},"mini":{"request_week":5}}`, "default_model", "mini"))
	alice, aliceID := e.NewUser("alice11", user.RoleUser)
	s := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID})
	now := time.Now()
	use(t, e, s.ID, "gpt-4o", ruleOf(t, p, "gpt-4o"), now, 10, 10, true)
	for range 3 {
		use(t, e, s.ID, "mini", ruleOf(t, p, "mini"), now, 10, 10, true)
	}

	// gpt-4o leaves the plan; mini's week limit drops below its use and a
	// period limit is added.
	root.OK("PUT", "/api/plan/", map[string]any{"id": p.ID, "model_limits": `{"mini":{"request_week":2,"request_period":9,"period_h":1}}`, "default_model": "mini"})
	u := usageOf(t, alice, s.ID)
	limits, listed, ok := u.limitsOf("gpt-4o")
	if !ok || listed || len(limits) != 0 {
		t.Fatalf("gpt-4o after it left the plan: listed %v limits %+v (present %v)", listed, limits, ok)
	}
	limits, listed, _ = u.limitsOf("mini")
	if !listed || len(limits) != 3 || limits[0].Name != "request_period" || limits[0].WindowHours != 1 || limits[0].Used != 3 ||
		limits[0].Remaining != 6 || limits[1].Name != "request_week" || limits[1].Used != 3 || limits[1].Remaining != 0 {
		t.Fatalf("mini after the change %+v", limits)
	}
	if u.LifetimeRequests != 4 || u.LifetimeTokens != 40 {
		t.Fatalf("lifetime %+v", u)
	}
}

func TestSweepPlanUsage(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	p := createPlan(t, root, planBody("Pro", "model_limits", `{"gpt-4o":{"request_week":100}}`, "default_model", ""))
	alice, aliceID := e.NewUser("alice12", user.RoleUser)
	s := subscribe(t, root, map[string]any{"user_id": aliceID, "plan_id": p.ID})
	rule := ruleOf(t, p, "gpt-4o")
	now := time.Now()
	use(t, e, s.ID, "gpt-4o", rule, now.Add(-31*24*time.Hour), 5, 5, true)       // settled, in buckets no window counts
	dead := use(t, e, s.ID, "gpt-4o", rule, now.Add(-3*time.Hour), 10, 0, false) // open: its process died
	// On a server database the hold was made under this process's live
	// billing lease, which would keep it (it comes back when the lease
	// expires); a hold of a process that died before leases, or on SQLite,
	// has none: the sweep's case.
	storetest.ExecSQL(t, e.Config.SQLDSN, e.DBPath(), "UPDATE plan_usage_holds SET lease_id = 0 WHERE hold_key = '"+dead.Key+"'")
	fresh := use(t, e, s.ID, "gpt-4o", rule, now, 20, 0, false) // open: a call in flight

	weekUsed := func() (requests, lifetimeTokens int64) {
		u := usageOf(t, alice, s.ID)
		limits, _, _ := u.limitsOf("gpt-4o")
		return limits[0].Used, u.LifetimeTokens
	}
	if r, tok := weekUsed(); r != 2 || tok != 35 {
		t.Fatalf("before the sweep: week %d requests, lifetime %d tokens", r, tok)
	}
	released, pruned, err := e.App.SweepPlanUsage(context.Background(), now)
	if err != nil || released != 1 || pruned != 2 {
		t.Fatalf("sweep released %d, pruned %d (%v); want 1 stale hold and the old fine and coarse buckets", released, pruned, err)
	}
	if r, tok := weekUsed(); r != 1 || tok != 25 {
		t.Fatalf("after the sweep: week %d requests, lifetime %d tokens; want the fresh call only (and the old call's lifetime tokens)", r, tok)
	}
	// The call in flight still settles.
	if ok, err := e.App.Store.SettleUsage(context.Background(), fresh, 30); err != nil || !ok {
		t.Fatalf("settle after the sweep: %v %v", ok, err)
	}
	if released, pruned, err := e.App.SweepPlanUsage(context.Background(), now); err != nil || released != 0 || pruned != 0 {
		t.Fatalf("second sweep released %d, pruned %d (%v)", released, pruned, err)
	}
	// Hours on, the settled call has no reservation left to release.
	if released, _, err := e.App.SweepPlanUsage(context.Background(), now.Add(3*time.Hour)); err != nil || released != 0 {
		t.Fatalf("later sweep released %d (%v)", released, err)
	}
}
