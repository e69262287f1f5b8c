package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/redemption"
	"github.com/modelgate/modelgate/internal/user"
)

// syncFrom pushes one row event to node e as node 9 (a peer this node
// never hears from otherwise: recorded with its secret at an address
// nothing answers) and returns {applied, skipped}.
func syncFrom(t *testing.T, e *apptest.Env, seq int64, table string, pk int64, row map[string]any, timeUS int64) [2]int {
	t.Helper()
	// The first call records node 9; later ones find it there.
	e.Root().Do("POST", "/api/cluster_node/", map[string]any{"node_id": 9, "node_name": "node-9",
		"address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(9)})
	c := e.PeerClient(9, apptest.NodeSecret(9))
	var ans struct {
		Applied int `json:"applied"`
		Skipped int `json:"skipped"`
	}
	c.OK("POST", "/api/cluster/sync", map[string]any{"source_node_id": 9, "events": []map[string]any{{
		"id": seq*50 + 9, "table_name": table, "operation": "UPDATE", "primary_key": pk, "data": row,
		"event_time": timeUS / 1e6, "event_time_us": timeUS,
	}}}).Decode(t, &ans)
	return [2]int{ans.Applied, ans.Skipped}
}

// TestClusterFinalStatesWin: a row event written on a node that had not
// heard of a redemption or an activation (newer, but with the old status)
// must not make the owner's code unused or its order pending again: the
// owner would credit it a second time.
func TestClusterFinalStatesWin(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.NewNode(t, 1, apptest.NodeSecret(1))
	root := e.Root()
	enableBank(root)
	topupOn(root)
	u, uid := e.NewUser("erin", user.RoleUser)
	keys := createCodes(t, root, "final", 4000, 2)
	code := codeByKey(t, root, keys[0])
	u.OK("POST", "/api/user/topup", map[string]string{"key": keys[0]})
	later := time.Now().Add(time.Minute).UnixMicro()

	if got := syncFrom(t, e, 1, "redemptions", code.ID, map[string]any{"id": code.ID, "status": redemption.StatusUnused, "name": "stale"}, later); got != [2]int{0, 1} {
		t.Fatalf("a newer unused row over a used code: applied/skipped %v, want skipped", got)
	}
	u.Fail("POST", "/api/user/topup", map[string]string{"key": keys[0]}, http.StatusOK, api.MsgRedeemKeyUsed)
	// The same peer's newer row keeping the status applies (last writer wins).
	if got := syncFrom(t, e, 2, "redemptions", code.ID, map[string]any{"id": code.ID, "status": redemption.StatusUsed, "name": "renamed"}, later); got != [2]int{1, 0} {
		t.Fatalf("a newer used row: applied/skipped %v", got)
	}
	if c := codeByKey(t, root, keys[0]); c.Name != "renamed" || c.Status != redemption.StatusUsed {
		t.Fatalf("code after: %+v", c)
	}
	// An older row that is further along applies over a newer unused one.
	other := codeByKey(t, root, keys[1])
	if got := syncFrom(t, e, 3, "redemptions", other.ID, map[string]any{"id": other.ID, "status": redemption.StatusUsed}, 1_000_000); got != [2]int{1, 0} {
		t.Fatalf("an older used row over an unused code: applied/skipped %v", got)
	}
	u.Fail("POST", "/api/user/topup", map[string]string{"key": keys[1]}, http.StatusOK, api.MsgRedeemKeyUsed)

	a := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	root.OK("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
	// Later than the payment, whose time passed the applied events' above.
	// Within CLUSTER_MAX_CLOCK_SKEW (5 min): a later time is refused.
	later = time.Now().Add(3 * time.Minute).UnixMicro()
	if got := syncFrom(t, e, 4, "orders", a.Order.ID, map[string]any{"id": a.Order.ID, "status": 0, "pay_status": 0}, later); got != [2]int{0, 1} {
		t.Fatalf("a newer pending row over a paid order: applied/skipped %v, want skipped", got)
	}
	root.OK("POST", apptest.Path("/api/order/%d/test_pay", a.Order.ID), nil)
	if q := userQuota(t, e, uid); q != 4000+12_000_000 || topupLogs(t, e, uid) != 2 {
		t.Fatalf("balance %d, %d top-up logs: want one code and one order credited", q, topupLogs(t, e, uid))
	}
}
