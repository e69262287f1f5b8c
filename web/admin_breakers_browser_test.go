package web_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// A channel whose upstream keeps failing for two users trips its breaker
// for the model;
// the channels page shows it open with the upstream's message, the next
// probe and that the state is the node's, in both languages.
func TestBrowserChannelsPageShowsBreakers(t *testing.T) {
	p := newPage(t)
	e := apptest.New(t)
	broken := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: broken.URL})
	g.UpdateChannel(g.ChannelID, map[string]any{"name": "broken", "priority": 10})
	spare := fakeupstream.New(t)
	g.AddChannel(apptest.ChannelSpec{URL: spare.URL, Name: "spare"})
	broken.SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable, ErrorMessage: "upstream melted"})
	// Two users: one user's failures alone never open a breaker.
	other, otherID := e.NewUser("caller2", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": otherID, "quota": 10_000_000})
	keys := []string{g.Key, other.CreateToken(map[string]any{"name": "relay", "unlimited_quota": true}).Key}
	for i := range 5 {
		if r := e.Call(keys[i%2], "POST", "/v1/chat/completions", chat("gpt-test")); r.Status != http.StatusOK {
			t.Fatalf("the spare channel did not answer: %d %s", r.Status, r.Body)
		}
	}

	p.login(e.Server.URL, "root", apptest.RootPassword)
	p.click(`#nav-admin a[href="/admin/channels"]`)
	p.waitText("h1", "Channels")
	p.waitText(`tr[data-channel="broken"] details.breakers summary`, "Breaker open for 1 model(s)")
	p.waitText(`tr[data-channel="broken"] li[data-breaker="gpt-test"] .badge`, "Open")
	p.waitText(`tr[data-channel="broken"] li[data-breaker="gpt-test"]`, "upstream melted")
	p.waitText(`tr[data-channel="broken"] li[data-breaker="gpt-test"]`, "probe at the first call after")
	p.waitText(`tr[data-channel="broken"] details.breakers`, "per node")
	p.screenshot("admin-channel-breakers")
	if missing := p.missingLabels(); len(missing) > 0 {
		t.Errorf("labels missing: %v", missing)
	}
}
