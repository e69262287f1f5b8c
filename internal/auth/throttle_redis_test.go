package auth

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// sharedThrottles returns two throttles on one Redis, as two nodes would
// have. The test needs a real Redis: MODELGATE_TEST_REDIS.
func sharedThrottles(t *testing.T) (*SharedLoginThrottle, *SharedLoginThrottle) {
	url := os.Getenv("MODELGATE_TEST_REDIS")
	if url == "" {
		t.Skip("MODELGATE_TEST_REDIS is not set")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	prefix := "mgtest:" + rand.Text() + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})
	log := slog.New(slog.DiscardHandler)
	return NewSharedLoginThrottle(rdb, prefix, log), NewSharedLoginThrottle(rdb, prefix, log)
}

func TestSharedThrottleCountsFailuresOfAllNodes(t *testing.T) {
	a, b := sharedThrottles(t)
	for i := range pairLimit {
		node := a
		if i%2 == 1 {
			node = b
		}
		if ok, _ := node.Allow("Root", "10.0.0.1"); !ok {
			t.Fatalf("attempt %d refused early", i+1)
		}
		node.Failed("Root", "10.0.0.1")
	}
	// Neither node alone saw five failures, together they did.
	if ok, wait := a.Allow("root", "10.0.0.1"); ok || wait <= 0 {
		t.Fatalf("after %d failures on two nodes: ok=%v wait=%v", pairLimit, ok, wait)
	}
	if ok, _ := b.Allow("root", "10.0.0.2"); !ok {
		t.Fatal("another address is blocked by the pair limit")
	}
	b.Succeeded("root", "10.0.0.1")
	a.local.Succeeded("root", "10.0.0.1")
	if ok, _ := a.Allow("root", "10.0.0.1"); !ok {
		t.Fatal("success did not clear the pair counter")
	}
}

func TestSharedThrottleWithoutRedisStillLimitsLocally(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens
	defer rdb.Close()
	th := NewSharedLoginThrottle(rdb, "x:", slog.New(slog.DiscardHandler))
	for range pairLimit {
		if ok, _ := th.Allow("u", "ip"); !ok {
			t.Fatal("refused while under the limit")
		}
		th.Failed("u", "ip")
	}
	if ok, _ := th.Allow("u", "ip"); ok {
		t.Fatal("local limit not applied when redis is down")
	}
}
