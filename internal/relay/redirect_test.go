package relay_test

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// TestUpstreamRedirectIsNotFollowed: a channel that answers a redirect
// does not get the call, and with it the channel's key, sent to the host
// the redirect names; the redirect is the channel's answer and bills
// nothing. The relay sends on its transport directly (upstream.go,
// roundTrip), so this is what net/http's client with a CheckRedirect that
// refused used to ensure.
func TestUpstreamRedirectIsNotFollowed(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	elsewhere := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: 1, Quota: 1 << 30})
	for _, status := range []int{301, 302, 303, 307, 308} {
		up.SetBehavior(fakeupstream.Behavior{Status: status,
			Header: http.Header{"Location": {elsewhere.URL + "/v1/chat/completions"}}})
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", chatBody("gpt-test", "hi", false)); r.Status == http.StatusOK {
			t.Fatalf("redirect %d answered 200: %s", status, r.Body)
		}
	}
	if n := elsewhere.Count(); n != 0 {
		t.Fatalf("the redirect's target got %d requests, want 0", n)
	}
	if n := up.Count(); n != 5 {
		t.Fatalf("the channel got %d requests, want 5", n)
	}
	if logs := g.ConsumeLogs(); len(logs) != 0 {
		t.Fatalf("%d consume logs for redirects, want 0", len(logs))
	}
}
