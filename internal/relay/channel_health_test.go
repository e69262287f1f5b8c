package relay_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// A 403 that refuses one request (a content policy, a model the key may not
// use) is that request's answer: the client gets it, no other channel is
// tried, and the channel keeps serving everyone else.
func TestRequestRefusalLeavesTheChannelEnabled(t *testing.T) {
	apptest.Parallel(t)
	for name, tc := range map[string]struct {
		typ     int
		refusal fakeupstream.Behavior
	}{
		"openai content policy": {1, fakeupstream.Behavior{Status: http.StatusForbidden,
			ErrorMessage: "Your request was flagged by our content policy."}},
		"openai model access": {1, fakeupstream.Behavior{Status: http.StatusForbidden,
			ErrorMessage: "Your request was flagged by our content policy.", ErrorCode: "model_not_found"}},
		"anthropic permission_error": {14, fakeupstream.Behavior{Status: http.StatusForbidden,
			ErrorMessage: "Your request was flagged by our content policy."}},
		"gemini permission denied": {24, fakeupstream.Behavior{Status: http.StatusForbidden,
			ErrorMessage: "Your request was flagged by our content policy."}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, 0)
			up := fakeupstream.New(t)
			up.SetBehavior(fakeupstream.Behavior{Reply: "preferred"})
			id := f.g.AddChannel(apptest.ChannelSpec{URL: up.URL, Type: tc.typ, Name: "preferred", Priority: 10})
			before := f.g.Quota(f.g.UserID)
			up.Script(tc.refusal)
			r := f.chat("")
			if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "flagged by our content policy") {
				t.Fatalf("want the upstream's 403 relayed, got %d %s", r.Status, r.Body)
			}
			if f.ups[0].Count() != 0 {
				t.Fatalf("a refused request was retried on another channel")
			}
			if ch := f.g.ChannelState(id); ch.Status != 1 {
				t.Fatalf("one request's refusal disabled the channel: %+v", ch)
			}
			wantReply(t, f.chat(""), "preferred")
			if got := f.g.Quota(f.g.UserID); got >= before || up.Count() != 2 {
				t.Fatalf("balance %d → %d, upstream calls %d: want only the answered call billed", before, got, up.Count())
			}
		})
	}
}

// Answers that refuse the key or its account in the other dialects disable
// the channel, and the call is answered by another one.
func TestKeyRefusalsDisableTheChannelInEveryDialect(t *testing.T) {
	apptest.Parallel(t)
	for name, tc := range map[string]struct {
		typ     int
		refusal fakeupstream.Behavior
	}{
		"anthropic 401":                  {14, fakeupstream.Behavior{Status: http.StatusUnauthorized}},
		"anthropic authentication_error": {14, fakeupstream.Behavior{Status: http.StatusForbidden, ErrorType: "authentication_error"}},
		"gemini API_KEY_SERVICE_BLOCKED": {24, fakeupstream.Behavior{Status: http.StatusForbidden, ErrorCode: "API_KEY_SERVICE_BLOCKED"}},
		"gemini CONSUMER_SUSPENDED":      {24, fakeupstream.Behavior{Status: http.StatusForbidden, ErrorCode: "CONSUMER_SUSPENDED"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, 0)
			up := fakeupstream.New(t)
			id := f.g.AddChannel(apptest.ChannelSpec{URL: up.URL, Type: tc.typ, Name: "refused", Priority: 10})
			up.Script(tc.refusal)
			wantReply(t, f.chat(""), "up0")
			if ch := f.g.ChannelState(id); ch.Status != 3 {
				t.Fatalf("want the channel auto-disabled, got %+v", ch)
			}
		})
	}
}

// The retest re-enables a channel the system disabled once its upstream
// answers again, waits ChannelRecheckMinutes between tests of one channel,
// and never touches a channel an admin disabled.
func TestRecheckReEnablesAutoDisabledChannels(t *testing.T) {
	apptest.Parallel(t)
	ctx := context.Background()
	f := newFleet(t, 10, 0, 10)
	recheck := func() {
		t.Helper()
		if err := f.e.App.RecheckChannels(ctx); err != nil {
			t.Fatalf("recheck: %v", err)
		}
	}
	// age makes every channel's last test an hour old.
	age := func() { f.e.ExecSQL("UPDATE channels SET test_time = test_time - 3600") }

	f.g.UpdateChannel(f.ids[2], map[string]any{"status": 2}) // by hand; its upstream is healthy
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusUnauthorized})
	wantReply(t, f.chat(""), "up1")
	if ch := f.g.ChannelState(f.ids[0]); ch.Status != 3 {
		t.Fatalf("want channel 0 auto-disabled, got %+v", ch)
	}

	f.g.SetOption("ChannelRecheckMinutes", "0") // off
	age()
	recheck()
	wantCounts(t, f, 1, 1, 0)

	f.g.SetOption("ChannelRecheckMinutes", "10")
	recheck() // tested an hour ago: due, but still refused
	wantCounts(t, f, 2, 1, 0)
	if ch := f.g.ChannelState(f.ids[0]); ch.Status != 3 || !strings.Contains(ch.LastError, "401") {
		t.Fatalf("a failed retest: want status 3 with the failure, got %+v", ch)
	}
	f.ups[0].SetBehavior(fakeupstream.Behavior{Reply: "up0"})
	recheck() // tested just now: not due yet
	wantCounts(t, f, 2, 1, 0)

	age()
	recheck()
	wantCounts(t, f, 3, 1, 0)
	if ch := f.g.ChannelState(f.ids[0]); ch.Status != 1 || ch.LastError != "" {
		t.Fatalf("a passed retest: want the channel enabled, got %+v", ch)
	}
	wantReply(t, f.chat(""), "up0") // serving again at once
	if ch := f.g.ChannelState(f.ids[2]); ch.Status != 2 || f.ups[2].Count() != 0 {
		t.Fatalf("the retest touched a channel disabled by hand: %+v, %d calls", ch, f.ups[2].Count())
	}
}
