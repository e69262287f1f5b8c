package relay_test

import (
	"context"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// Money held for a call whose process died (no settlement ever came) is
// given back when the gateway starts again: a crash never keeps a hold.
func TestHoldsOfACrashedProcessAreReturnedAtStart(t *testing.T) {
	apptest.Parallel(t)
	if storetest.Selected(t).Name != "sqlite" {
		t.Skip("at start only SQLite can know every open hold is stale; shared databases age them out")
	}
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	before := g.Quota(g.UserID)
	// A reservation as the relay makes it, left open as a crash would.
	res, err := e.App.Store.ApplyBilling(context.Background(), []store.ReserveOp{{UserID: g.UserID, Amount: 5000}}, nil)
	if err != nil || res[0].Err != nil || res[0].Held != 5000 {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	if got := g.Quota(g.UserID); got != before-5000 {
		t.Fatalf("balance while held = %d", got)
	}
	cfg := e.Config
	e.Stop()
	e2 := apptest.Start(t, cfg)
	var u apptest.UserInfo
	e2.Root().OK("GET", apptest.Path("/api/user/%d", g.UserID), nil).Decode(t, &u)
	if u.Quota != before {
		t.Fatalf("balance after restart = %d, want %d back", u.Quota, before)
	}
}
