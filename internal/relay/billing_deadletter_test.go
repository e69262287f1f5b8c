package relay_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

type deadLetter struct {
	ID        int64  `json:"id"`
	UserID    int64  `json:"user_id"`
	TokenID   int64  `json:"token_id"`
	ChannelID int64  `json:"channel_id"`
	Held      int64  `json:"held"`
	Cost      int64  `json:"cost"`
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"`
	RequestID string `json:"request_id"`
	ModelName string `json:"model_name"`
	SettleKey string `json:"settle_key"`
}

// consumeLogsOf returns the consume logs of username.
func consumeLogsOf(t *testing.T, g *apptest.Gateway, username string) []apptest.LogInfo {
	t.Helper()
	g.Env.SettleAll()
	var all []apptest.LogInfo
	for p := 0; ; p++ {
		var page []apptest.LogInfo
		q := url.Values{"type": {"2"}, "username": {username}, "page_size": {"100"}, "p": {fmt.Sprint(p)}}
		r := g.Root.OK("GET", "/api/log/?"+q.Encode(), nil)
		r.Decode(t, &page)
		all = append(all, page...)
		if len(page) == 0 || int64(len(all)) >= r.Total {
			return all
		}
	}
}

// A settlement the database refuses must not stop anyone's calls: the rest
// of its batch commits, it is retried, parked as a dead letter that admins
// see, and its replay (once the cause is fixed) charges it exactly once.
func TestPoisonedSettlementIsParkedAndReplayedOnce(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	// A little latency keeps the number of calls reasonable; four callers
	// still start a reservation within every flush interval.
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8, Delay: 10 * time.Millisecond})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	const cost = 88 // 12 prompt tokens at 2 + 8 completion tokens at 8 CNY per 1M
	other, otherID := e.NewUser("other", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": otherID, "quota": 10_000_000})
	otherKey := other.CreateToken(map[string]any{"name": "relay", "unlimited_quota": true}).Key
	callerBefore, otherBefore := g.Quota(g.UserID), g.Quota(otherID)

	create, drop := storetest.PoisonLogTrigger(e.Engine())
	e.ExecSQL(create...)

	// The poisoned call among a steady stream of calls of both users, so
	// its settlement shares group commits with good settlements and with
	// reservations; the stream goes on while it is being retried.
	call := func(key, reqID string) bool {
		r := e.Call(key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false), "X-Request-Id", reqID)
		if r.Status != http.StatusOK {
			t.Errorf("call %s: %d %s", reqID, r.Status, r.Body)
		}
		return r.Status == http.StatusOK
	}
	var callerCalls, otherCalls atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		key, count, name := g.Key, &callerCalls, "caller"
		if w%2 == 1 {
			key, count, name = otherKey, &otherCalls, "other"
		}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if call(key, fmt.Sprintf("%s-%d-%d", name, w, i)) {
					count.Add(1)
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	call(g.Key, "poison")
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	good, otherGood := callerCalls.Load(), otherCalls.Load()
	t.Logf("%d calls of the caller, %d of the other user", good, otherGood)

	var letters []deadLetter
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := g.Root.OK("GET", "/api/billing/dead_letter/?p=0&page_size=10", nil)
		r.Decode(t, &letters)
		if r.Total == 1 && len(letters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter after 20 s: total %d, %s", r.Total, r.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d := letters[0]
	if d.UserID != g.UserID || d.ChannelID != g.ChannelID || d.Cost != cost || d.Held != 0 || d.RequestID != "poison" ||
		d.ModelName != "gpt-test" || d.Attempts != 5 || !strings.Contains(d.Error, "poisoned settlement") ||
		len(d.SettleKey) != 32 || d.SettleKey == "poison" {
		t.Fatalf("dead letter %+v", d)
	}

	// Everyone else was billed exactly; the poisoned call's hold came back.
	if got := g.Quota(otherID); got != otherBefore-otherGood*cost {
		t.Errorf("other user's balance %d, want %d", got, otherBefore-otherGood*cost)
	}
	if got := g.Quota(g.UserID); got != callerBefore-good*cost {
		t.Errorf("caller's balance %d, want %d (the poisoned call uncharged, its hold back)", got, callerBefore-good*cost)
	}
	if n := int64(len(consumeLogsOf(t, g, "other"))); n != otherGood {
		t.Errorf("other user has %d consume logs, want %d", n, otherGood)
	}
	if n := int64(len(consumeLogsOf(t, g, "caller"))); n != good {
		t.Errorf("caller has %d consume logs, want %d", n, good)
	}

	// Admins see dead letters; only root replays them.
	admin, _ := e.NewUser("admin", 10)
	admin.OK("GET", "/api/billing/dead_letter/", nil)
	if r := admin.Do("POST", apptest.Path("/api/billing/dead_letter/%d/replay", d.ID), nil); r.Success {
		t.Fatalf("an admin replayed a dead letter: %s", r.Raw)
	}

	// A replay that fails again keeps the row, with one more attempt.
	r := g.Root.Do("POST", apptest.Path("/api/billing/dead_letter/%d/replay", d.ID), nil)
	if r.Status != http.StatusOK || r.Success || !strings.Contains(r.Message, "poisoned settlement") {
		t.Fatalf("replay under the trigger: %d %s", r.Status, r.Raw)
	}
	g.Root.OK("GET", "/api/billing/dead_letter/", nil).Decode(t, &letters)
	if len(letters) != 1 || letters[0].Attempts != 6 {
		t.Fatalf("after a failed replay: %+v", letters)
	}

	e.ExecSQL(drop)
	g.Root.OK("POST", apptest.Path("/api/billing/dead_letter/%d/replay", d.ID), nil)
	g.Root.Fail("POST", apptest.Path("/api/billing/dead_letter/%d/replay", d.ID), nil, http.StatusOK, "该结算记录不存在")
	if r := g.Root.OK("GET", "/api/billing/dead_letter/", nil); r.Total != 0 {
		t.Fatalf("dead letters left after replay: %s", r.Raw)
	}
	if got := g.Quota(g.UserID); got != callerBefore-(good+1)*cost {
		t.Errorf("caller's balance after replay %d, want %d", got, callerBefore-(good+1)*cost)
	}
	logs := consumeLogsOf(t, g, "caller")
	poisoned := 0
	for _, l := range logs {
		if l.RequestID == "poison" {
			poisoned++
		}
	}
	if int64(len(logs)) != good+1 || poisoned != 1 {
		t.Errorf("after replay: %d consume logs, %d of the poisoned call; want %d and 1", len(logs), poisoned, good+1)
	}

	// The book of a local ledger re-read the replayed balance: the next
	// call is billed from it.
	call(g.Key, "after-replay")
	if got := g.Quota(g.UserID); got != callerBefore-(good+2)*cost {
		t.Errorf("caller's balance after one more call %d, want %d", got, callerBefore-(good+2)*cost)
	}
}
