package ratelimit

import (
	"context"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLimiter is a limiter on the Redis of MODELGATE_TEST_REDIS under a
// fresh prefix; the test is skipped without it.
func redisLimiter(t *testing.T) (*Limiter, *redis.Client, string) {
	t.Helper()
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

	// A slot that is never given back: its process died.
	creq := &Request{KeyID: 3, UserID: 7, Key: Limits{Concurrency: 1}, Now: now}
	lost, r := l.Admit(ctx, creq)
	if r.Refused() {
		t.Fatal("first slot refused")
	}
	lost.refresh.stop() // the process is gone: nothing refreshes it
	if _, r := l.Admit(ctx, creq); !r.Refused() || r.Measure != MeasureConcurrency {
		t.Fatalf("second slot: %+v", r)
	}
	slots := prefix + "rl:k3:c"
	if ttl := rdb.PTTL(ctx, slots).Val(); ttl <= 0 {
		t.Fatalf("slot set without expiry: %v", ttl)
	}
	// Move the slot's expiry into the past, as 60 s without refresh would.
	rdb.ZAdd(ctx, slots, redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: lost.slot})
	tk, r = l.Admit(ctx, creq)
	if r.Refused() {
		t.Fatalf("after the dead slot expired: %+v", r)
	}
	l.Done(&tk, 0)
	if n := rdb.ZCard(ctx, slots).Val(); n != 0 {
		t.Errorf("%d slots left after done, want 0", n)
	}
	if st := l.Status(); st.Backend != "redis" || st.RedisErrors != 0 {
		t.Errorf("status %+v", st)
	}
}
