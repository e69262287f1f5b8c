package ratelimit

import (
	"context"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/redisserver"
	"github.com/redis/go-redis/v9"
)

// testRedis is the Redis of MODELGATE_TEST_REDIS, or else a redis-server
// of the test's own; the test is skipped when neither is there.
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("MODELGATE_TEST_REDIS")
	if url == "" {
		url = redisserver.Start(t).URL
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ClientOptions(opts))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisLimiter is a limiter on testRedis under a fresh prefix.
func redisLimiter(t *testing.T) (*Limiter, *redis.Client, string) {
	t.Helper()
	rdb := testRedis(t)
	prefix := "mgtest:" + rand.Text() + ":"
	return New(Config{Redis: rdb, Prefix: prefix}), rdb, prefix
}

// TestRedisLimiter: parallel admissions through the script admit exactly
// the limit for key and user together; a settlement frees the unused
// estimate; a slot whose process died (never settled) frees itself once
// its expiry passes.
func TestRedisLimiter(t *testing.T) {
	l, rdb, prefix := redisLimiter(t)
	ctx := context.Background()
	now := time.Unix(6000, 0)
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			_, r := l.Admit(ctx, &Request{KeyID: 1, UserID: 9, Key: Limits{RPM: 50}, User: Limits{RPM: 17}, Now: now})
			if !r.Refused() {
				mu.Lock()
				admitted++
				mu.Unlock()
			} else if r.Scope != ScopeGroup || r.Measure != MeasureRequests {
				t.Errorf("refused by %d/%d, want the group's rpm", r.Scope, r.Measure)
			}
		})
	}
	wg.Wait()
	if admitted != 17 {
		t.Fatalf("admitted %d, want 17", admitted)
	}

	req := &Request{KeyID: 2, UserID: 8, Key: Limits{TPM: 100}, Tokens: 60, Now: now}
	tk, r := l.Admit(ctx, req)
	if r.Refused() || r.Tokens != (Quota{100, 40}) {
		t.Fatalf("first: %+v", r)
	}
	if _, r := l.Admit(ctx, req); !r.Refused() || r.Measure != MeasureTokens {
		t.Fatalf("second before settling: %+v", r)
	}
	l.Done(&tk, 10)
	req.Tokens = 90
	if _, r := l.Admit(ctx, req); r.Refused() {
		t.Fatalf("after settling to 10: %+v", r)
	}

	// A slot that is never given back: its process died. Another process
	// (a limiter of its own memory) finds the slot taken until its lease
	// ends.
	creq := &Request{KeyID: 3, UserID: 7, Key: Limits{Concurrency: 1}, Now: now}
	lost, r := l.Admit(ctx, creq)
	if r.Refused() {
		t.Fatal("first slot refused")
	}
	lost.refresh.stop() // the process is gone: nothing renews it
	other := New(Config{Redis: rdb, Prefix: prefix})
	if _, r := other.Admit(ctx, creq); !r.Refused() || r.Measure != MeasureConcurrency {
		t.Fatalf("second slot: %+v", r)
	}
	slots := prefix + "rl:k3:c"
	if ttl := rdb.PTTL(ctx, slots).Val(); ttl <= 0 || ttl > slotTTL {
		t.Fatalf("slot set expiry %v, want within the lease %v", ttl, slotTTL)
	}
	// Move the slot's lease end into the past (Redis's clock), as 60 s
	// without renewal would.
	rdb.ZAdd(ctx, slots, redis.Z{Score: float64(redisNow(t, rdb) - 1), Member: lost.slot})
	tk, r = other.Admit(ctx, creq)
	if r.Refused() {
		t.Fatalf("after the dead slot expired: %+v", r)
	}
	other.Done(&tk, 0)
	if n := rdb.ZCard(ctx, slots).Val(); n != 0 {
		t.Errorf("%d slots left after done, want 0", n)
	}
	if st := l.Status(); st.Backend != "redis" || st.RedisErrors != 0 {
		t.Errorf("status %+v", st)
	}
}

// redisNow is Redis's time in ms.
func redisNow(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}
