package api_test

import (
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
)

type ownAccount struct {
	ID         int64  `json:"id"`
	Quota      int64  `json:"quota"`
	AffCode    string `json:"aff_code"`
	AffCount   int64  `json:"aff_count"`
	AffRewards int64  `json:"aff_history_quota"`
}

func TestInvitationCreditsInviteeAtOnceAndInviterOnFirstPaidOrder(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	for k, v := range map[string]any{"QuotaForInviter": 300_000, "QuotaForInvitee": 100_000, "NewUserQuota": 5} {
		root.OK("PUT", "/api/option/", map[string]any{"key": k, "value": v})
	}
	enableBank(root)
	topupOn(root)
	inviter, _ := e.NewUser("ian", 1)
	var me ownAccount
	inviter.OK("GET", "/api/user/self", nil).Decode(t, &me)

	// aff_code in the body; ?aff= on the query (the console's link); an
	// unknown code registers without a bonus.
	c := e.Client()
	c.OK("POST", "/api/user/register", map[string]string{"username": "inv1", "password": "password-1", "aff_code": me.AffCode})
	c.OK("POST", "/api/user/register?aff="+me.AffCode, map[string]string{"username": "inv2", "password": "password-1"})
	c.OK("POST", "/api/user/register", map[string]string{"username": "inv3", "password": "password-1", "aff_code": "NOSUCH00"})
	quotaOf := func(name string) ownAccount {
		cl := e.Client()
		cl.Login(name, "password-1")
		var a ownAccount
		cl.OK("GET", "/api/user/self", nil).Decode(t, &a)
		return a
	}
	if q := quotaOf("inv1").Quota; q != 100_005 {
		t.Fatalf("invitee quota %d, want NewUserQuota + QuotaForInvitee", q)
	}
	if q := quotaOf("inv2").Quota; q != 100_005 {
		t.Fatalf("?aff= invitee quota %d", q)
	}
	if q := quotaOf("inv3").Quota; q != 5 {
		t.Fatalf("unknown code gave %d", q)
	}
	inviter.OK("GET", "/api/user/self", nil).Decode(t, &me)
	if me.Quota != 0 || me.AffCount != 2 || me.AffRewards != 0 {
		t.Fatalf("inviter after registrations: %+v (no reward before a paid order)", me)
	}

	// inv1's first paid order, activated by many parallel admin marks:
	// the inviter is credited once.
	inv1 := e.Client()
	inv1.Login("inv1", "password-1")
	first := topup(t, inv1, map[string]any{"amount": 1, "pay_method": "bank"})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			root.Do("PUT", apptest.Path("/api/order/%d", first.Order.ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "W-1"})
		})
	}
	wg.Wait()
	inviter.OK("GET", "/api/user/self", nil).Decode(t, &me)
	if me.Quota != 300_000 || me.AffRewards != 300_000 || me.AffCount != 2 {
		t.Fatalf("inviter after the first paid order: %+v, want one reward of 300000", me)
	}
	second := topup(t, inv1, map[string]any{"amount": 1, "pay_method": "bank"})
	root.OK("PUT", apptest.Path("/api/order/%d", second.Order.ID), map[string]any{"status": 1, "pay_method": "bank", "pay_trade_no": "W-2"})
	inviter.OK("GET", "/api/user/self", nil).Decode(t, &me)
	if me.Quota != 300_000 || me.AffRewards != 300_000 || me.AffCount != 2 {
		t.Fatalf("inviter after a second paid order: %+v, want the figures unchanged", me)
	}
	// The reward is a logged credit of the inviter.
	logs := apptest.OKData[[]struct {
		Type    int    `json:"type"`
		Quota   int64  `json:"quota"`
		Content string `json:"content"`
	}](inviter, "GET", "/api/log/self?type=1", nil)
	n := 0
	for _, l := range logs {
		if l.Quota == 300_000 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d reward logs in %+v", n, logs)
	}
}
