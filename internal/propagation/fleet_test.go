package propagation_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver
)

// statusInfo is the part of GET /api/status these tests read.
type statusInfo struct {
	ConfigVersion int64  `json:"config_version"`
	ConfigSync    string `json:"config_sync"`
	SystemName    string `json:"system_name"`
}

func status(e *apptest.Env) statusInfo {
	return apptest.OKData[statusInfo](e.Client(), "GET", "/api/status", nil)
}

// fleet starts two gateways on one fresh database of engine, with Redis or
// without, and a poll of an hour: whatever reaches the second node within
// a second came by the push channel.
func fleet(t *testing.T, engine string, withRedis bool) (a, b *apptest.Env) {
	t.Helper()
	redisURL := ""
	if withRedis {
		redisURL = redisOrSkip(t)
	}
	return fleetWith(t, engine, redisURL)
}

func redisOrSkip(t *testing.T) string {
	t.Helper()
	u := os.Getenv("MODELGATE_TEST_REDIS")
	if u == "" {
		t.Skip("no Redis test server (set MODELGATE_TEST_REDIS)")
	}
	return u
}

// fleetWith is fleet with Redis at redisURL ("" for none).
func fleetWith(t *testing.T, engine, redisURL string) (a, b *apptest.Env) {
	t.Helper()
	withRedis := redisURL != ""
	eng := engineOrSkip(t, engine)
	cfg := apptest.Config(t, "SQL_DSN", eng.FreshDSN(t), "CONFIG_POLL_INTERVAL", "1h",
		"REDIS_CONN_STRING", redisURL, "REDIS_KEY_PREFIX", "mgtest:"+rand.Text()+":")
	a = apptest.Start(t, cfg)
	cfg.DataDir = t.TempDir()
	b = apptest.Start(t, cfg)
	want := "postgres"
	if withRedis {
		want = "redis"
	}
	within(t, "both nodes subscribed", 5*time.Second, func() bool {
		return status(a).ConfigSync == want && status(b).ConfigSync == want
	})
	return a, b
}

// within waits for cond, failing t when it is not true within limit, and
// returns how long it took.
func within(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func TestConfigChangesReachTheOtherNodeWithinASecond(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine string
		redis  bool
	}{
		{"postgres-notify", "postgres", false},
		{"postgres-redis", "postgres", true},
		{"mysql-redis", "mysql", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fleet(t, tc.engine, tc.redis)
			checkPropagation(t, a, b)
		})
	}
}

// checkPropagation changes an option, a price, a channel, a user and a key
// on a and requires b to act on each within a second, then the config
// versions of both to agree.
func checkPropagation(t *testing.T, a, b *apptest.Env) {
	up := fakeupstream.New(t)
	g := a.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	agree := func(what string) int64 {
		t.Helper()
		var v int64
		d := within(t, what+": config versions agree", time.Second, func() bool {
			sa, sb := status(a), status(b)
			v = sa.ConfigVersion
			return sa.ConfigVersion == sb.ConfigVersion
		})
		t.Logf("%s: versions agree at %d after %v", what, v, d)
		return v
	}
	v0 := agree("setup")
	call := func() int {
		return b.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}).Status
	}
	// b routes by the channel and price a created and knows the key.
	if s := call(); s != 200 {
		t.Fatalf("call on b: %d", s)
	}
	reaches := func(what string, change func(), seen func() bool) {
		t.Helper()
		before := status(a).ConfigVersion
		change()
		d := within(t, what+" reaches b", time.Second, seen)
		t.Logf("%s reached b after %v", what, d)
		if v := agree(what); v <= before {
			t.Fatalf("%s: config version %d did not move from %d", what, v, before)
		}
	}
	reaches("an option", func() { g.SetOption("SystemName", "fleet-renamed") },
		func() bool { return status(b).SystemName == "fleet-renamed" })
	priceID := g.ModelPriceID(t, "gpt-test")
	reaches("a price disabled", func() { g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": priceID, "enabled": false}) },
		func() bool { return call() != 200 })
	reaches("a price enabled", func() { g.Root.OK("PUT", "/api/model_price/", map[string]any{"id": priceID, "enabled": true}) },
		func() bool { return call() == 200 })
	reaches("a channel disabled", func() { g.UpdateChannel(g.ChannelID, map[string]any{"status": 2}) },
		func() bool { return call() != 200 })
	reaches("a channel enabled", func() { g.UpdateChannel(g.ChannelID, map[string]any{"status": 1}) },
		func() bool { return call() == 200 })
	tokenID := g.TokenID()
	setKey := func(status int) func() {
		return func() { g.User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": tokenID, "status": status}) }
	}
	reaches("a key disabled", setKey(2), func() bool { return call() == 401 })
	reaches("a key enabled", setKey(1), func() bool { return call() == 200 })
	var u struct {
		Username string `json:"username"`
	}
	g.Root.OK("GET", apptest.Path("/api/user/%d", g.UserID), nil).Decode(t, &u)
	reaches("a user disabled", func() {
		g.Root.OK("POST", "/api/user/manage", map[string]string{"username": u.Username, "action": "disable"})
	},
		func() bool { return call() == 403 })
	if v := agree("the end"); v < v0+8 {
		t.Fatalf("config version %d after 8 changes from %d", v, v0)
	}
}

// A node whose LISTEN connection is killed reconnects and reads what it
// missed: a change made while it was away still reaches it, and the
// nodes agree again, long before the hour-long poll.
func TestListenerReconnectsAndCatchesUp(t *testing.T) {
	a, b := fleet(t, "postgres", false)
	root := a.Root()
	state, err := a.App.Store.ConfigState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", a.Config.SQLDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 3 {
		// Both nodes listen on the channel of this database only.
		var killed int
		err := db.QueryRow(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND query = 'LISTEN "modelgate_config_` + state.Instance + `"') k`).Scan(&killed)
		if err != nil || killed != 2 {
			t.Fatalf("round %d: killed %d listeners (%v), want both nodes'", round, killed, err)
		}
		name := fmt.Sprintf("after-reconnect-%d", round)
		root.OK("PUT", "/api/option/", map[string]string{"key": "SystemName", "value": name})
		d := within(t, "a change made while the listener was down reaches b", 3*time.Second, func() bool {
			return status(b).SystemName == name
		})
		t.Logf("round %d: reached b after %v", round, d)
		within(t, "both nodes listen again and agree", 3*time.Second, func() bool {
			sa, sb := status(a), status(b)
			return sa.ConfigSync == "postgres" && sb.ConfigSync == "postgres" && sa.ConfigVersion == sb.ConfigVersion
		})
	}
}

// Without a push channel (MySQL, no Redis) the poll carries changes: the
// node reports "poll" and sees a disabled key within the poll interval,
// and the versions agree.
func TestPollCarriesChangesWithoutAPushChannel(t *testing.T) {
	eng := engineOrSkip(t, "mysql")
	cfg := apptest.Config(t, "SQL_DSN", eng.FreshDSN(t), "CONFIG_POLL_INTERVAL", "1s", "REDIS_CONN_STRING", "")
	a := apptest.Start(t, cfg)
	cfg.DataDir = t.TempDir()
	b := apptest.Start(t, cfg)
	if s := status(b).ConfigSync; s != "poll" {
		t.Fatalf("config_sync %q, want poll", s)
	}
	up := fakeupstream.New(t)
	g := a.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	call := func() int {
		return b.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}).Status
	}
	within(t, "the new channel and key work on b", 3*time.Second, func() bool { return call() == 200 })
	g.User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": g.TokenID(), "status": 2})
	d := within(t, "the disabled key is refused on b", 3*time.Second, func() bool { return call() == 401 })
	t.Logf("poll: reached b after %v", d)
	within(t, "versions agree", 3*time.Second, func() bool { return status(a).ConfigVersion == status(b).ConfigVersion })
}

func engineOrSkip(t *testing.T, name string) storetest.Engine {
	t.Helper()
	for _, e := range storetest.Engines() {
		if e.Name == name {
			return e
		}
	}
	t.Skipf("no %s test server", name)
	return storetest.Engine{}
}

// Redis hanging never holds a commit up: with the pub/sub server gone
// silent, admin changes on one node answer at once; the other node falls
// back to polling, and when Redis is back it subscribes again and catches
// up on what it missed.
func TestRedisOutageNeverBlocksACommit(t *testing.T) {
	u, err := url.Parse(redisOrSkip(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := apptest.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	a, b := fleetWith(t, "postgres", u.String())
	root := a.Root()
	proxy.SetHung(true)
	within(t, "b notices the lost subscription", 5*time.Second, func() bool { return status(b).ConfigSync == "poll" })
	for i := range 10 {
		start := time.Now()
		root.OK("PUT", "/api/option/", map[string]string{"key": "SystemName", "value": fmt.Sprintf("during-outage-%d", i)})
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("change %d took %v while Redis hangs", i, d)
		}
	}
	proxy.SetHung(false)
	d := within(t, "b catches up after Redis is back", 10*time.Second, func() bool {
		sb := status(b)
		return sb.SystemName == "during-outage-9" && sb.ConfigSync == "redis" && sb.ConfigVersion == status(a).ConfigVersion
	})
	t.Logf("caught up %v after Redis came back", d)
}

// Changes committed at once on both nodes, to options and prices: when
// the last one has answered, both nodes hold the same values and the
// same config version within a second.
func TestConcurrentChangesOnBothNodesAgree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"postgres-notify", false}, {"postgres-redis", true}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fleet(t, "postgres", tc.redis)
			roots := []*apptest.Client{a.Root(), b.Root()}
			price := apptest.OKData[struct {
				ID int64 `json:"id"`
			}](roots[0], "POST", "/api/model_price/", map[string]any{"model_name": "m-concurrent", "input_price": 1, "output_price": 1})
			var wg sync.WaitGroup
			for i := range 24 {
				wg.Go(func() {
					c := roots[i%2]
					if i%3 == 0 {
						c.OK("PUT", "/api/model_price/", map[string]any{"id": price.ID, "input_price": float64(i + 1)})
						return
					}
					c.OK("PUT", "/api/option/", map[string]string{"key": "SystemName", "value": fmt.Sprintf("concurrent-%d", i)})
				})
			}
			wg.Wait()
			d := within(t, "both nodes agree", time.Second, func() bool {
				sa, sb := status(a), status(b)
				return sa.ConfigVersion == sb.ConfigVersion && sa.SystemName == sb.SystemName
			})
			t.Logf("agreed %v after the last change", d)
		})
	}
}

// The config version moves by one with each configuration change and not
// with a billed call (counters only), on whatever engine the suite runs.
func TestConfigVersionCountsConfigurationChangesOnly(t *testing.T) {
	e := apptest.New(t)
	want := map[string]string{"sqlite": "poll", "postgres": "postgres", "mysql": "poll"}[e.Engine()]
	if os.Getenv("MODELGATE_TEST_REDIS") != "" && e.Engine() != "sqlite" {
		want = "redis"
	}
	within(t, "config_sync "+want, 5*time.Second, func() bool { return status(e).ConfigSync == want })
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	v0 := status(e).ConfigVersion
	if v0 < 5 { // root, channel, price, user, key at least
		t.Fatalf("config version %d after the setup", v0)
	}
	for range 3 {
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}); r.Status != 200 {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
	}
	e.SettleAll()
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": g.UserID, "quota": 1000})
	if v := status(e).ConfigVersion; v != v0 {
		t.Fatalf("config version moved from %d to %d with calls and a top-up", v0, v)
	}
	g.SetOption("SystemName", "counted")
	g.UpdateChannel(g.ChannelID, map[string]any{"weight": 3})
	if v := status(e).ConfigVersion; v != v0+2 {
		t.Fatalf("config version %d after two changes from %d", v, v0)
	}
}

// A change whose message never came (its node died between commit and
// publish) leaves a hole: the next message shows it, and the node reloads
// everything about a second later instead of waiting for the poll.
func TestAMissedMessageIsCaughtUpAfterTheNextOne(t *testing.T) {
	a, b := fleet(t, "postgres", false)
	// A writer that publishes nothing: a node that died after its commit.
	silent, err := store.Open(context.Background(), store.Options{DSN: a.Config.SQLDSN})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := silent.SetOptions(context.Background(), map[string]string{"SystemName": "unheard"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if s := status(b).SystemName; s == "unheard" {
		t.Fatal("b saw a change nobody published: the test proves nothing")
	}
	// A price: b rebuilds its routes and prices for it, not its options.
	a.Root().OK("POST", "/api/model_price/", map[string]any{"model_name": "after-the-hole", "input_price": 1, "output_price": 1})
	d := within(t, "b reloads past the hole", 3*time.Second, func() bool {
		sa, sb := status(a), status(b)
		return sb.SystemName == "unheard" && sb.ConfigVersion == sa.ConfigVersion
	})
	if d < 900*time.Millisecond {
		t.Fatalf("caught up after %v: before the grace, so not by the hole", d)
	}
	t.Logf("caught up %v after the next message", d)
}
