package relay_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// poolView is the part of GET /api/channel/:id that describes a key pool.
type poolView struct {
	Status       int    `json:"status"`
	HasKey       bool   `json:"has_key"`
	KeyCount     int    `json:"key_count"`
	LastError    string `json:"last_error"`
	DisabledKeys []struct {
		Index  int    `json:"index"`
		Reason string `json:"reason"`
		Time   int64  `json:"time"`
	} `json:"disabled_keys"`
}

func readPool(t *testing.T, g *apptest.Gateway, id int64) poolView {
	t.Helper()
	var v poolView
	r := g.Root.OK("GET", apptest.Path("/api/channel/%d", id), nil)
	r.Decode(t, &v)
	if strings.Contains(string(r.Raw), "pool-key-") {
		t.Fatalf("the channel view shows a key: %s", r.Raw)
	}
	return v
}

// keysSeen counts the upstream's requests by the key they presented.
func keysSeen(up *fakeupstream.Server) map[string]int {
	out := map[string]int{}
	for _, r := range up.Requests() {
		out[r.Key]++
	}
	return out
}

func poolChat(e *apptest.Env, key string) *apptest.V1 {
	return e.Call(key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
}

// A channel's key text with one key a line is a pool: calls take the keys
// in turn, the view counts them without showing any.
func TestKeyPoolSpreadsCallsRoundRobin(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t, fakeupstream.WithKey("pool-key-1", "pool-key-2", "pool-key-3"))
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, UpstreamKey: "pool-key-1\n\npool-key-2\r\n  pool-key-3  \n"})
	for i := range 9 {
		if r := poolChat(e, g.Key); r.Status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	seen := keysSeen(up)
	for _, k := range []string{"pool-key-1", "pool-key-2", "pool-key-3"} {
		if seen[k] != 3 {
			t.Fatalf("want 3 calls per key, got %v", seen)
		}
	}
	if v := readPool(t, g, g.ChannelID); v.KeyCount != 3 || len(v.DisabledKeys) != 0 || !v.HasKey {
		t.Fatalf("view: %+v", v)
	}
	// At most 100 keys: more is refused and changes nothing.
	var many strings.Builder
	for i := range 101 {
		many.WriteString(apptest.Path("k-%d\n", i))
	}
	r := g.Root.Do("PUT", "/api/channel/", map[string]any{"id": g.ChannelID, "key": many.String()})
	if r.Success || r.Message != "一个渠道最多 100 个密钥" {
		t.Fatalf("101 keys: %+v", r)
	}
	if v := readPool(t, g, g.ChannelID); v.KeyCount != 3 {
		t.Fatalf("a refused update changed the pool: %+v", v)
	}
}

// A key the upstream refuses for good is retired alone, persisted across
// a restart and shown in the view; the call is answered on another key and
// billed once; an admin's re-enable brings it back into the turn.
func TestKeyPoolRetiresARefusedKeyAlone(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t, fakeupstream.WithKey("pool-key-1", "pool-key-2", "pool-key-3"))
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, UpstreamKey: "pool-key-1\npool-key-2\npool-key-3"})
	before := g.Quota(g.UserID)

	// The second request (key 2 in turn) is refused as a revoked key is.
	up.Script(fakeupstream.Behavior{}, fakeupstream.Behavior{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided"})
	for i := range 2 {
		if r := poolChat(e, g.Key); r.Status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	if n := up.Count(); n != 3 {
		t.Fatalf("want 3 upstream requests (the refused one retried), got %d", n)
	}
	reqs := up.Requests()
	if reqs[1].Key != "pool-key-2" || reqs[2].Key == "pool-key-2" {
		t.Fatalf("the refused call was not retried on another key: %q then %q", reqs[1].Key, reqs[2].Key)
	}
	logs := g.ConsumeLogs()
	if len(logs) != 2 || before-g.Quota(g.UserID) != apptest.SumQuota(logs) {
		t.Fatalf("want 2 calls billed once each: %d logs, %d charged, %d logged", len(logs), before-g.Quota(g.UserID), apptest.SumQuota(logs))
	}
	v := readPool(t, g, g.ChannelID)
	if v.Status != 1 || v.KeyCount != 3 || len(v.DisabledKeys) != 1 || v.DisabledKeys[0].Index != 1 ||
		!strings.Contains(v.DisabledKeys[0].Reason, "Incorrect API key") || v.DisabledKeys[0].Time == 0 {
		t.Fatalf("view after the refusal: %+v", v)
	}

	// Persisted: a restarted node still skips it.
	e = e.Restart()
	g.Env, g.Root = e, e.Root()
	for range 4 {
		if r := poolChat(e, g.Key); r.Status != http.StatusOK {
			t.Fatalf("after restart: %d %s", r.Status, r.Body)
		}
	}
	if seen := keysSeen(up); seen["pool-key-2"] != 1 || seen["pool-key-1"]+seen["pool-key-3"] != 6 {
		t.Fatalf("a retired key was used: %v", seen)
	}

	// Out of range: refused, nothing changes.
	for _, idx := range []string{"3", "-1", "x", "99999999999999999999"} {
		r := g.Root.Do("POST", "/api/channel/"+apptest.Path("%d", g.ChannelID)+"/keys/"+idx+"/enable", nil)
		if r.Success {
			t.Fatalf("index %s accepted", idx)
		}
	}
	g.Root.OK("POST", apptest.Path("/api/channel/%d/keys/1/enable", g.ChannelID), nil)
	if v := readPool(t, g, g.ChannelID); len(v.DisabledKeys) != 0 || v.Status != 1 {
		t.Fatalf("view after re-enable: %+v", v)
	}
	for range 3 {
		poolChat(e, g.Key)
	}
	if seen := keysSeen(up); seen["pool-key-2"] != 2 {
		t.Fatalf("the re-enabled key is not used again: %v", seen)
	}
}

// Hundreds of parallel calls over a pool with one revoked key: every call
// is answered, the key is retired once, every call billed exactly once.
func TestKeyPoolParallelRefusals(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t, fakeupstream.WithKey("pool-key-1", "pool-key-3")) // key 2 is unknown: 401
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, UpstreamKey: "pool-key-1\npool-key-2\npool-key-3",
		Quota: 1_000_000_000}) // room for every call's hold at once
	before := g.Quota(g.UserID)
	const n = 200
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() { statuses[i] = poolChat(e, g.Key).Status })
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("call %d: %d", i, s)
		}
	}
	logs := g.ConsumeLogs()
	if len(logs) != n || before-g.Quota(g.UserID) != apptest.SumQuota(logs) {
		t.Fatalf("%d logs, %d charged, %d logged", len(logs), before-g.Quota(g.UserID), apptest.SumQuota(logs))
	}
	v := readPool(t, g, g.ChannelID)
	if v.Status != 1 || len(v.DisabledKeys) != 1 || v.DisabledKeys[0].Index != 1 {
		t.Fatalf("view: %+v", v)
	}
}

// The last key of a pool refused takes the channel out, as a one-key
// channel is; the recheck brings back the keys that answer again, and the
// channel with them. The channel test reports each key.
func TestKeyPoolLastKeyDisablesAndRecheckRestores(t *testing.T) {
	apptest.Parallel(t)
	ctx := context.Background()
	f := newFleet(t, 10, 0)
	// Channel 0's upstream accepts only pool-key-a; its pool also holds a
	// Vertex-style JSON key, many lines long, which it refuses.
	upA := fakeupstream.New(t, fakeupstream.WithKey("pool-key-a"))
	upA.SetBehavior(fakeupstream.Behavior{Reply: "pool"})
	jsonKey := "{\n  \"type\": \"service_account\",\n  \"project_id\": \"p\",\n  \"private_key\": \"-----BEGIN-----\\nabc\\n-----END-----\\n\"\n}"
	id := f.g.AddChannel(apptest.ChannelSpec{URL: upA.URL, Name: "pool", Priority: 20, Key: jsonKey + "\npool-key-a"})
	if v := readPool(t, f.g, id); v.KeyCount != 2 {
		t.Fatalf("a JSON key counted as %d keys", v.KeyCount)
	}

	// The channel test tests each key and names the failing one.
	r := f.g.Root.Do("GET", apptest.Path("/api/channel/test/%d", id), nil)
	if r.Success || !strings.Contains(r.Message, "[0]") || !strings.Contains(r.Message, "401") {
		t.Fatalf("test of a pool with a refused key: %+v", r)
	}
	if upA.Count() != 2 {
		t.Fatalf("the test sent %d requests, want one per key", upA.Count())
	}

	wantReply(t, poolChat(f.e, f.g.Key), "pool") // JSON key refused (retired), then pool-key-a answers
	if v := readPool(t, f.g, id); v.Status != 1 || len(v.DisabledKeys) != 1 || v.DisabledKeys[0].Index != 0 {
		t.Fatalf("view: %+v", v)
	}
	upA.SetBehavior(fakeupstream.Behavior{Status: http.StatusUnauthorized})
	wantReply(t, poolChat(f.e, f.g.Key), "up0") // the last key refused: another channel answers
	v := readPool(t, f.g, id)
	if v.Status != 3 || len(v.DisabledKeys) != 2 || v.LastError == "" {
		t.Fatalf("one key left out of one: want the channel auto-disabled, got %+v", v)
	}

	// The recheck: the upstream answers again, for pool-key-a only.
	upA.SetBehavior(fakeupstream.Behavior{Reply: "pool"})
	f.g.SetOption("ChannelRecheckMinutes", "10")
	f.e.ExecSQL("UPDATE channels SET test_time = test_time - 3600")
	if err := f.e.App.RecheckChannels(ctx); err != nil {
		t.Fatal(err)
	}
	v = readPool(t, f.g, id)
	if v.Status != 1 || len(v.DisabledKeys) != 1 || v.DisabledKeys[0].Index != 0 {
		t.Fatalf("after the recheck: want the channel back with the working key, got %+v", v)
	}
	wantReply(t, poolChat(f.e, f.g.Key), "pool")
}
