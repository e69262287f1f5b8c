package propagation_test

import (
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store/storetest"
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
	var eng *storetest.Engine
	for _, e := range storetest.Engines() {
		if e.Name == engine {
			eng = &e
		}
	}
	if eng == nil {
		t.Skipf("no %s test server (set MODELGATE_TEST_%s_DSN)", engine, map[string]string{"postgres": "POSTGRES", "mysql": "MYSQL"}[engine])
	}
	redisURL := os.Getenv("MODELGATE_TEST_REDIS")
	if withRedis && redisURL == "" {
		t.Skip("no Redis test server (set MODELGATE_TEST_REDIS)")
	}
	if !withRedis {
		redisURL = ""
	}
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
