package api_test

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/token"
)

// userInfo reads user id as root.
func userInfo(t *testing.T, root *apptest.Client, id int64) apptest.UserInfo {
	t.Helper()
	var u apptest.UserInfo
	root.OK("GET", apptest.Path("/api/user/%d", id), nil).Decode(t, &u)
	return u
}

// charge bills user id cost with nothing held, as a call that overran its
// hold does: the way a balance becomes negative.
func charge(t *testing.T, e *apptest.Env, id, cost int64) {
	t.Helper()
	_, err := e.App.Store.ApplyBilling(context.Background(), nil, []store.SettleOp{{UserID: id, Cost: cost}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTopupBounds: a top-up beyond the maximum, or one that would take the
// balance past it, is refused with nothing written, and the user stays
// readable, listable and able to log in.
func TestTopupBounds(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	_, id := e.NewUser("olga", 1)
	for _, q := range []int64{math.MaxInt64, math.MinInt64, -math.MaxInt64, pricing.MaxBalance + 1, -pricing.MaxBalance - 1} {
		root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": q}, http.StatusOK, api.MsgQuotaTooLarge)
	}
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": pricing.MaxBalance})
	// The sum would pass the maximum (and, from 9223372036854775807, overflow).
	for _, q := range []int64{1, pricing.MaxBalance} {
		root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": q}, http.StatusOK, api.MsgBalanceLimit)
	}
	if u := userInfo(t, root, id); u.Quota != pricing.MaxBalance {
		t.Fatalf("balance %d, want %d", u.Quota, pricing.MaxBalance)
	}
	var list []apptest.UserInfo
	root.OK("GET", "/api/user/", nil).Decode(t, &list)
	root.OK("GET", "/api/user/search?keyword=olga", nil).Decode(t, &list)
	if len(list) != 1 || list[0].Quota != pricing.MaxBalance {
		t.Fatalf("search = %+v", list)
	}
	e.Client().Login("olga", "password-olga")
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": -pricing.MaxBalance})
	if u := userInfo(t, root, id); u.Quota != 0 {
		t.Fatalf("balance %d after deducting all", u.Quota)
	}
	// A code as large as the maximum is refused at redemption while the
	// balance is full, and the code stays unused.
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 5})
	olga := e.Client()
	olga.Login("olga", "password-olga")
	key := createCodes(t, root, "max", pricing.MaxBalance, 1)[0]
	olga.Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusOK, api.MsgBalanceLimit)
	if c := codeByKey(t, root, key); c.Status != redemption.StatusUnused {
		t.Fatalf("code status %d after a refused redemption", c.Status)
	}
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": -5})
	olga.OK("POST", "/api/user/topup", map[string]string{"key": key})
	if u := userInfo(t, root, id); u.Quota != pricing.MaxBalance {
		t.Fatalf("balance %d after redeeming the maximum", u.Quota)
	}
}

// TestMoneyInputBounds: every money field of /api refuses values beyond its
// documented maximum, NaN-like and negative values, and writes nothing.
func TestMoneyInputBounds(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, id := e.NewUser("pavel", 1)

	root.Fail("POST", "/api/redemption/", map[string]any{"name": "big", "quota": int64(math.MaxInt64)}, http.StatusOK, redemption.MsgQuotaTooLarge)
	root.Fail("POST", "/api/redemption/", map[string]any{"name": "big", "quota": pricing.MaxBalance + 1}, http.StatusOK, redemption.MsgQuotaTooLarge)
	key := createCodes(t, root, "ok", 10, 1)[0]
	code := codeByKey(t, root, key)
	root.Fail("PUT", "/api/redemption/", map[string]any{"id": code.ID, "quota": int64(math.MaxInt64)}, http.StatusOK, redemption.MsgQuotaTooLarge)
	if redemptionTotal(t, root) != 1 || codeByKey(t, root, key).Quota != 10 {
		t.Fatal("a refused code was written")
	}

	root.Fail("POST", "/api/user/", map[string]any{"username": "quinn", "password": "password-1", "quota": int64(math.MaxInt64)}, http.StatusOK, api.MsgQuotaRange)
	root.Fail("POST", "/api/user/", map[string]any{"username": "quinn", "password": "password-1", "quota": -1}, http.StatusOK, api.MsgQuotaRange)
	root.Fail("PUT", "/api/user/", map[string]any{"id": id, "quota": int64(math.MaxInt64), "quota_before": 0}, http.StatusOK, api.MsgQuotaRange)

	user.Fail("POST", "/api/token/", map[string]any{"name": "k", "remain_quota": int64(math.MaxInt64)}, http.StatusOK, token.MsgRemainQuotaMax)
	tok := user.CreateToken(map[string]any{"name": "k", "remain_quota": 100})
	user.Fail("PUT", "/api/token/", map[string]any{"id": tok.ID, "name": "k", "remain_quota": pricing.MaxBalance + 1}, http.StatusOK, token.MsgRemainQuotaMax)

	root.Fail("PUT", "/api/option/", map[string]any{"key": "NewUserQuota", "value": "9223372036854775807"}, http.StatusOK, "")

	for _, price := range []string{"1e308", "-1", "1000000.5", "1e400"} {
		body := `{"model_name":"m","input_price":` + price + `}`
		r := root.Do("POST", "/api/model_price/", body)
		if r.Success || (r.Message != pricing.MsgPriceInvalid && r.Message != httpx.MsgInvalidParams) {
			t.Errorf("price %s: %s", price, r.Raw)
		}
	}
	for _, field := range []string{"output_price", "cached_price", "per_request_price"} {
		root.Fail("POST", "/api/model_price/", map[string]any{"model_name": "m", field: 1e308}, http.StatusOK, pricing.MsgPriceInvalid)
	}
	var mp struct {
		ID int64 `json:"id"`
	}
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "m", "input_price": pricing.MaxPrice}).Decode(t, &mp)
	root.Fail("PUT", "/api/model_price/", map[string]any{"id": mp.ID, "output_price": 1e308}, http.StatusOK, pricing.MsgPriceInvalid)
	root.Fail("POST", "/api/group_price/", map[string]any{"group_name": "g", "discount": 1e308}, http.StatusOK, pricing.MsgDiscountInvalid)
	if n := root.OK("GET", "/api/model_price/", nil); !bytes.Contains(n.Raw, []byte(`"input_price":1000000`)) || bytes.Contains(n.Raw, []byte("e+308")) {
		t.Fatalf("model prices = %s", n.Raw)
	}
}

// TestCreditToNegativeBalance: credits apply to a balance below zero (an
// overrun); only debits are bounded by the balance.
func TestCreditToNegativeBalance(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, id := e.NewUser("rita", 1)
	charge(t, e, id, 500)
	if q := userInfo(t, root, id).Quota; q != -500 {
		t.Fatalf("balance %d after an overrun of 500", q)
	}
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 200})
	root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": -1}, http.StatusOK, api.MsgQuotaBelowBalance)
	key := createCodes(t, root, "debt", 1000, 1)[0]
	var credited int64
	user.OK("POST", "/api/user/topup", map[string]string{"key": key}).Decode(t, &credited)
	if q := userInfo(t, root, id).Quota; credited != 1000 || q != 700 {
		t.Fatalf("credited %d, balance %d, want 1000 and 700", credited, q)
	}
	if c := codeByKey(t, root, key); c.Status != redemption.StatusUsed || topupLogs(t, e, id) != 2 {
		t.Fatalf("code status %d, %d top-up logs", c.Status, topupLogs(t, e, id))
	}
}

// TestUpdateUserQuotaIsDelta: PUT /api/user/ never overwrites charges made
// since the admin read the balance.
func TestUpdateUserQuotaIsDelta(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	_, id := e.NewUser("sven", 1)
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": 1000})
	read := userInfo(t, root, id) // the admin's form
	charge(t, e, id, 300)         // a call settles meanwhile

	// The form sent back unchanged, or with a quota but no quota_before:
	// the other fields apply, the balance is left alone.
	var u apptest.UserInfo
	root.OK("PUT", "/api/user/", map[string]any{"id": id, "quota": read.Quota, "display_name": "Sven"}).Decode(t, &u)
	if u.Quota != 700 {
		t.Fatalf("balance %d after a stale form, want 700", u.Quota)
	}
	root.OK("PUT", "/api/user/", map[string]any{"id": id, "quota": 5000})
	// A change from a stale read is refused.
	root.Fail("PUT", "/api/user/", map[string]any{"id": id, "quota": 5000, "quota_before": read.Quota}, http.StatusOK, api.MsgBalanceMoved)
	if q := userInfo(t, root, id).Quota; q != 700 {
		t.Fatalf("balance %d, want 700", q)
	}
	// From the current balance it applies as a delta and is logged.
	root.OK("PUT", "/api/user/", map[string]any{"id": id, "quota": 900, "quota_before": 700}).Decode(t, &u)
	if u.Quota != 900 {
		t.Fatalf("balance %d, want 900", u.Quota)
	}
	var logs []apptest.LogInfo
	root.OK("GET", "/api/log/?type=3", nil).Decode(t, &logs)
	if len(logs) != 1 || !strings.Contains(logs[0].Content, "从 ¥0.0007 修改为 ¥0.0009") {
		t.Fatalf("admin logs = %+v", logs)
	}
}

// TestAdminTopupIdempotent: 100 parallel top-ups with one Idempotency-Key
// credit once, and every one gets the first answer.
func TestAdminTopupIdempotent(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	_, id := e.NewUser("tess", 1)
	root.Header.Set("Idempotency-Key", "order-42")
	body := map[string]any{"user_id": id, "quota": 7, "remark": "once"}
	var wg sync.WaitGroup
	results := make([]*apptest.Response, 100)
	for i := range results {
		wg.Go(func() { results[i] = root.Do("POST", "/api/topup", body) })
	}
	wg.Wait()
	replayed := 0
	for _, r := range results {
		if r.Status != http.StatusOK || !r.Success || !bytes.Equal(r.Raw, results[0].Raw) {
			t.Fatalf("answer %d %s, first %s", r.Status, r.Raw, results[0].Raw)
		}
		if r.Header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if q := userInfo(t, root, id).Quota; q != 7 || replayed != 99 || topupLogs(t, e, id) != 1 {
		t.Fatalf("balance %d, %d replayed, %d logs; want 7, 99, 1", q, replayed, topupLogs(t, e, id))
	}
	// The same key for another request is refused; a new key credits.
	root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": 8, "remark": "once"}, http.StatusOK, api.MsgIdempotencyMismatch)
	root.Header.Set("Idempotency-Key", "order-43")
	root.OK("POST", "/api/topup", body)
	root.Header.Set("Idempotency-Key", strings.Repeat("k", 129))
	root.Fail("POST", "/api/topup", body, http.StatusOK, api.MsgIdempotencyKeyInvalid)
	root.Header.Set("Idempotency-Key", "bad key")
	root.Fail("POST", "/api/topup", body, http.StatusOK, api.MsgIdempotencyKeyInvalid)
	// A refused request records nothing: the key stays usable.
	root.Header.Set("Idempotency-Key", "order-44")
	root.Fail("POST", "/api/topup", map[string]any{"user_id": id, "quota": -100}, http.StatusOK, api.MsgQuotaBelowBalance)
	root.OK("POST", "/api/topup", map[string]any{"user_id": id, "quota": -14})
	if q := userInfo(t, root, id).Quota; q != 0 {
		t.Fatalf("balance %d, want 0", q)
	}
	// Keys are the caller's own: another admin's "order-42" is a new key.
	admin, _ := e.NewUser("ursula", 10)
	admin.Header.Set("Idempotency-Key", "order-42")
	admin.OK("POST", "/api/topup", body)
	if q := userInfo(t, root, id).Quota; q != 7 {
		t.Fatalf("balance %d, want 7", q)
	}
}

// TestAdminTopupRoles: root tops up anyone, itself included; an admin only
// users of a lower role, never itself, another admin or root.
func TestAdminTopupRoles(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	var rootInfo apptest.UserInfo
	root.OK("GET", "/api/user/self", nil).Decode(t, &rootInfo)
	admin, adminID := e.NewUser("victor", 10)
	_, admin2ID := e.NewUser("wanda", 10)
	_, userID := e.NewUser("xena", 1)
	for _, target := range []int64{adminID, admin2ID, rootInfo.ID} {
		admin.Fail("POST", "/api/topup", map[string]any{"user_id": target, "quota": 100}, http.StatusOK, api.MsgCannotManageRole)
		admin.Fail("POST", "/api/topup", map[string]any{"user_id": target, "quota": -1}, http.StatusOK, api.MsgCannotManageRole)
	}
	admin.OK("POST", "/api/topup", map[string]any{"user_id": userID, "quota": 100})
	root.OK("POST", "/api/topup", map[string]any{"user_id": rootInfo.ID, "quota": 100})
	root.OK("POST", "/api/topup", map[string]any{"user_id": adminID, "quota": 100})
	for id, want := range map[int64]int64{adminID: 100, admin2ID: 0, rootInfo.ID: 100, userID: 100} {
		if q := userInfo(t, root, id).Quota; q != want {
			t.Errorf("user %d balance %d, want %d", id, q, want)
		}
	}
}

// TestRedeemIdempotent: a redemption retried with its Idempotency-Key gets
// the first answer (the credited quota) rather than "already used", and
// credits once; without the key the retry is "already used" as before.
func TestRedeemIdempotent(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	user, id := e.NewUser("yuri", 1)
	key := createCodes(t, root, "retry", 300, 1)[0]
	user.Header.Set("Idempotency-Key", "redeem-1")
	first := user.OK("POST", "/api/user/topup", map[string]string{"key": key})
	again := user.OK("POST", "/api/user/topup", map[string]string{"key": key})
	if !bytes.Equal(first.Raw, again.Raw) || again.Header.Get("Idempotent-Replayed") != "true" || string(first.Data) != "300" {
		t.Fatalf("first %s, retry %s", first.Raw, again.Raw)
	}
	if q := userInfo(t, root, id).Quota; q != 300 || topupLogs(t, e, id) != 1 {
		t.Fatalf("balance %d, %d logs", q, topupLogs(t, e, id))
	}
	user.Header.Set("Idempotency-Key", "redeem-2")
	user.Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusOK, api.MsgRedeemKeyUsed)
	user.Fail("POST", "/api/user/topup", map[string]string{"key": "NOSUCHCODE"}, http.StatusOK, api.MsgRedeemKeyInvalid)
	user.Header.Del("Idempotency-Key")
	user.Fail("POST", "/api/user/topup", map[string]string{"key": key}, http.StatusOK, api.MsgRedeemKeyUsed)
}
