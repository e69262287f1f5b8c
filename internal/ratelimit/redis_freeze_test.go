package ratelimit

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/redisserver"
	"github.com/redis/go-redis/v9"
)

// TestRedisFreezeFreesSlots (issue 25): a Redis frozen (SIGSTOP) while
// calls are admitted runs, when it resumes, the admission scripts it had
// received, whose callers stopped waiting long before. They must hold no
// slot: a key with concurrency 2 admits two calls at once through Redis
// within 2 s of the resume (before the fix, late scripts held slots for
// their 60 s lease: the key ran at half rate or stood still).
//
// The same when this node's clock is 45 s off Redis's either way, and for
// a node whose first admissions go to the frozen Redis: it has not learnt
// Redis's clock yet, so with a clock 45 s ahead its deadlines do not stop
// the late scripts; the slots they take are freed when Redis answers
// again (the node remembered them).
func TestRedisFreezeFreesSlots(t *testing.T) {
	srv := redisserver.Start(t)
	opts, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		skew time.Duration
		warm bool // calls went through Redis before the freeze
	}{
		{"in sync", 0, true},
		{"45s ahead", 45 * time.Second, true},
		{"45s behind", -45 * time.Second, true},
		{"45s ahead, first calls", 45 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(ClientOptions(opts))
			t.Cleanup(func() { rdb.Close() })
			prefix := "mgtest:" + rand.Text() + ":"
			clock := monotonicClock()
			l := New(Config{Redis: rdb, Prefix: prefix, Clock: func() time.Time { return clock().Add(tc.skew) }})
			freezeAndResume(t, srv, rdb, l, prefix, tc.warm)
			// The node learnt Redis's clock.
			if off := time.Duration(l.redis.clock.offset.Load()) * time.Millisecond; off+tc.skew > time.Second || off+tc.skew < -time.Second {
				t.Errorf("clock offset %v, want about %v", off, -tc.skew)
			}
		})
	}
}

// freezeAndResume runs calls of a concurrency-2 key on l (warm: they go
// through Redis before it is frozen), freezes Redis until admissions were
// sent to it and timed out, stops the calls, resumes Redis and requires
// two calls at once admitted through Redis within 2 s.
func freezeAndResume(t *testing.T, srv *redisserver.Server, rdb *redis.Client, l *Limiter, prefix string, warm bool) {
	ctx := context.Background()
	base := Request{KeyID: 1, UserID: 1, Key: Limits{Concurrency: 2}, Now: time.Unix(6000, 0)}
	var viaRedis, timedOut atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if !warm {
		// Connections open (a new one would wait for Redis's greeting,
		// not send the script) and the script loaded (or Redis would
		// only answer that it does not know it), but no admission
		// answered yet.
		if err := admitScript.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
		var pings sync.WaitGroup
		for range 8 {
			pings.Go(func() {
				if err := rdb.Ping(ctx).Err(); err != nil {
					t.Error(err)
				}
			})
		}
		pings.Wait()
		srv.Freeze(t)
	}
	for range 4 {
		wg.Go(func() {
			req := base
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				tk, r := l.Admit(ctx, &req)
				if tk.backend == backendMemory && time.Since(start) >= admitWait*9/10 {
					timedOut.Add(1) // the script went to the frozen Redis
				}
				if r.Refused() {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if tk.backend == backendRedis {
					viaRedis.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
				l.Done(&tk, 0)
			}
		})
	}
	if warm {
		waitFor(t, "calls admitted through Redis", func() bool { return viaRedis.Load() >= 20 })
		srv.Freeze(t)
	}
	waitFor(t, "admissions timed out on the frozen Redis", func() bool { return timedOut.Load() >= 2 })
	close(stop)
	wg.Wait()
	srv.Resume(t)
	resumed := time.Now()

	for {
		var pair [2]Ticket
		var both sync.WaitGroup
		for i := range pair {
			both.Go(func() {
				req := base
				pair[i], _ = l.Admit(ctx, &req)
			})
		}
		both.Wait()
		full := pair[0].backend == backendRedis && pair[1].backend == backendRedis
		if full {
			if n := rdb.ZCard(ctx, prefix+"rl:k1:c").Val(); n != 2 {
				t.Errorf("%d slots held with two calls running, want 2", n)
			}
		}
		l.Done(&pair[0], 0)
		l.Done(&pair[1], 0)
		if full {
			t.Logf("two calls at once through Redis %v after the resume (%d admissions had timed out)",
				time.Since(resumed).Round(time.Millisecond), timedOut.Load())
			break
		}
		if time.Since(resumed) > 2*time.Second {
			slots, _ := rdb.ZRangeWithScores(ctx, prefix+"rl:k1:c", 0, -1).Result()
			t.Fatalf("2 s after the resume two calls at once are not both admitted through Redis: %v, %v; slots %v",
				pair[0].backend, pair[1].backend, slots)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := rdb.ZCard(ctx, prefix+"rl:k1:c").Val(); n != 0 {
		t.Errorf("%d slots held after every call ended, want 0", n)
	}
}

// waitFor waits for cond, generously: a loaded machine is slow, and only
// the outcome is asserted.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
