package ratelimit

import (
	"context"
	"crypto/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The rules of the Redis scripts, run on a real Redis (MODELGATE_TEST_REDIS,
// or a redis-server of the test's own). Times are Redis's (its TIME): the
// scripts never read a node's clock.

// scriptKeys are the six keys of an admission under a fresh prefix: key
// requests, tokens, slots, then the user's.
func scriptKeys() []string {
	b := &redisBackend{prefix: "mgtest:" + rand.Text() + ":rl:"}
	kr, kt, kc := b.names("k", 1, 100)
	ur, ut, uc := b.names("u", 2, 100)
	return []string{kr, kt, kc, ur, ut, uc}
}

// TestAdmitScriptRules: what one admission does to the counters, by case.
func TestAdmitScriptRules(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	lease := slotTTL.Milliseconds()
	type slot struct {
		member string
		in     int64 // ms from Redis's now to the end of its lease
	}
	for _, tc := range []struct {
		name     string
		deadline int64 // ms from Redis's now
		key      Limits
		user     Limits
		est      int64
		slots    []slot // in the key's slot set before the call
		answer   int64  // 1 admitted, 0 refused, -1 late
		before   [6]int64
		after    [6]int64 // key requests, tokens, slots, user requests, tokens, slots
	}{
		{name: "in time: counted under key and user", deadline: 10_000,
			key: Limits{RPM: 5, TPM: 100, Concurrency: 2}, user: Limits{Concurrency: 3}, est: 40,
			answer: 1, after: [6]int64{1, 40, 1, 1, 40, 1}},
		{name: "late: counts nothing", deadline: -1,
			key: Limits{RPM: 5, TPM: 100, Concurrency: 2}, user: Limits{Concurrency: 3}, est: 40,
			answer: -1},
		{name: "late by a minute", deadline: -60_000,
			key: Limits{Concurrency: 1}, answer: -1},
		{name: "late with a full set: nothing dropped either", deadline: -1,
			key: Limits{Concurrency: 1}, slots: []slot{{"old", -5}},
			answer: -1, after: [6]int64{0, 0, 1}},
		{name: "slots past their lease are dropped", deadline: 10_000,
			key: Limits{Concurrency: 2}, slots: []slot{{"old", -5}, {"older", -60_000}, {"live", 30_000}},
			answer: 1, before: [6]int64{0, 0, 1}, after: [6]int64{1, 0, 2}},
		{name: "full: refused, nothing counted", deadline: 10_000,
			key: Limits{RPM: 5, Concurrency: 2}, slots: []slot{{"a", 30_000}, {"b", 1_000}},
			answer: 0, before: [6]int64{0, 0, 2}, after: [6]int64{0, 0, 2}},
		{name: "user full: key not counted either", deadline: 10_000,
			key: Limits{RPM: 5}, user: Limits{TPM: 10}, est: 11,
			answer: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := scriptKeys()
			now := redisNow(t, rdb)
			for _, s := range tc.slots {
				rdb.ZAdd(ctx, keys[2], redis.Z{Score: float64(now + s.in), Member: s.member})
			}
			member := "m" + rand.Text()
			res, err := admitScript.Run(ctx, rdb, keys, now+tc.deadline, tc.est, member, lease, windowTTL.Milliseconds(),
				tc.key.RPM, tc.key.TPM, tc.key.Concurrency, tc.user.RPM, tc.user.TPM, tc.user.Concurrency).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			after := redisNow(t, rdb)
			if len(res) != 8 || res[0] != tc.answer || [6]int64(res[1:7]) != tc.before || res[7] < now || res[7] > after {
				t.Fatalf("answer %v, want %d, counts %v, Redis's time in [%d, %d]", res, tc.answer, tc.before, now, after)
			}
			var got [6]int64
			for i, k := range keys {
				if i%3 == 2 {
					got[i] = rdb.ZCard(ctx, k).Val()
				} else {
					got[i], _ = rdb.Get(ctx, k).Int64()
				}
			}
			if got != tc.after {
				t.Errorf("counters %v, want %v", got, tc.after)
			}
			// An admitted call's slot ends its lease on Redis's clock, and
			// its set lives at least as long.
			for i, conc := range []int64{tc.key.Concurrency, tc.user.Concurrency} {
				set := keys[2+3*i]
				score, err := rdb.ZScore(ctx, set, member).Result()
				if tc.answer != 1 || conc == 0 {
					if err != redis.Nil {
						t.Errorf("%s: slot %v (%v) of a call not admitted", set, score, err)
					}
					continue
				}
				if int64(score) < now+lease || int64(score) > after+lease {
					t.Errorf("slot lease ends at %d, want Redis's now + %d in [%d, %d]", int64(score), lease, now+lease, after+lease)
				}
				if ttl := rdb.PTTL(ctx, set).Val(); ttl < slotTTL-5*time.Second || ttl > slotTTL {
					t.Errorf("slot set expiry %v, want about %v", ttl, slotTTL)
				}
			}
			if tc.answer == 1 && tc.key.RPM > 0 {
				if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= windowTTL-5*time.Second || ttl > windowTTL {
					t.Errorf("request counter expiry %v, want about %v", ttl, windowTTL)
				}
			}
		})
	}
}

// TestRenewScript: renewal extends a live slot's lease and its set's life
// from Redis's now; it does not take back a slot that is gone, nor
// shorten a set's life.
func TestRenewScript(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	set := scriptKeys()[2]
	now := redisNow(t, rdb)
	rdb.ZAdd(ctx, set, redis.Z{Score: float64(now + 1000), Member: "live"}, redis.Z{Score: float64(now + 5000), Member: "other"})
	rdb.PExpire(ctx, set, 2*time.Second)
	if err := renewScript.Run(ctx, rdb, []string{set}, slotTTL.Milliseconds(), "live").Err(); err != nil {
		t.Fatal(err)
	}
	after := redisNow(t, rdb)
	if s := int64(rdb.ZScore(ctx, set, "live").Val()); s < now+slotTTL.Milliseconds() || s > after+slotTTL.Milliseconds() {
		t.Errorf("renewed lease ends at %d, want Redis's now + %v", s, slotTTL)
	}
	if s := int64(rdb.ZScore(ctx, set, "other").Val()); s != now+5000 {
		t.Errorf("another slot's lease moved to %d", s)
	}
	if ttl := rdb.PTTL(ctx, set).Val(); ttl < slotTTL-5*time.Second {
		t.Errorf("set expiry %v after renewal, want about %v", ttl, slotTTL)
	}
	// A slot freed (or dropped) is not taken back by a late renewal.
	renewScript.Run(ctx, rdb, []string{set}, slotTTL.Milliseconds(), "gone")
	if err := rdb.ZScore(ctx, set, "gone").Err(); err != redis.Nil {
		t.Errorf("renewal took a slot that was gone: %v", err)
	}
	// A renewal with a shorter lease keeps the set's longer life.
	renewScript.Run(ctx, rdb, []string{set}, 1000, "other")
	if ttl := rdb.PTTL(ctx, set).Val(); ttl < slotTTL-5*time.Second {
		t.Errorf("set expiry shortened to %v", ttl)
	}
}

// TestDoneScript: settlement frees exactly the call's own slot and moves
// its tokens by the difference, never below 0, only in counters that
// still exist.
func TestDoneScript(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	keys := scriptKeys()
	now := redisNow(t, rdb)
	rdb.Set(ctx, keys[1], 100, time.Minute)
	rdb.Set(ctx, keys[4], 30, time.Minute)
	rdb.ZAdd(ctx, keys[2], redis.Z{Score: float64(now + 60_000), Member: "mine"}, redis.Z{Score: float64(now + 60_000), Member: "yours"})
	// Estimate 50, used 10: −40; the user's 30 stops at 0; a counter of an
	// ended window (gone) is not created.
	gone := keys[1] + ":gone"
	err := doneScript.Run(ctx, rdb, []string{keys[1], keys[4], gone, keys[2]}, -40, "mine", 3).Err()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.Get(ctx, keys[1]).Int64(); v != 60 {
		t.Errorf("key tokens %d, want 60", v)
	}
	if v, _ := rdb.Get(ctx, keys[4]).Int64(); v != 0 {
		t.Errorf("user tokens %d, want 0", v)
	}
	if ttl := rdb.PTTL(ctx, keys[4]).Val(); ttl <= 0 {
		t.Errorf("user tokens lost their expiry: %v", ttl)
	}
	if n := rdb.Exists(ctx, gone).Val(); n != 0 {
		t.Error("settlement created the counter of an ended window")
	}
	if m := rdb.ZRange(ctx, keys[2], 0, -1).Val(); len(m) != 1 || m[0] != "yours" {
		t.Errorf("slots after settlement %v, want [yours]", m)
	}
	// Settling again (a settlement whose answer was lost and is retried
	// for its slot) frees nobody else's.
	doneScript.Run(ctx, rdb, []string{keys[2]}, 0, "mine", 0)
	if n := rdb.ZCard(ctx, keys[2]).Val(); n != 1 {
		t.Errorf("%d slots after a second settlement, want 1", n)
	}
}

// TestRedisClock: the estimate of Redis's clock and the deadlines made
// from it, with an injected clock.
func TestRedisClock(t *testing.T) {
	local := time.UnixMilli(1_000_000)
	c := redisClock{now: func() time.Time { return local }}
	if got := c.local(); got != 1_000_000 {
		t.Fatalf("local %d", got)
	}
	// Before any answer the clocks are taken to agree.
	within := runWithin(admitWait)
	if within != 400*time.Millisecond || runWithin(5*time.Second) != 4900*time.Millisecond || runWithin(0) < time.Minute {
		t.Errorf("runWithin: %v for %v", within, admitWait)
	}
	if got := c.deadline(1_000_000, within); got != 1_000_000+400 {
		t.Errorf("first deadline %d", got)
	}
	for _, tc := range []struct {
		name                string
		sent, received, rdx int64
		late                bool
		offset              int64
	}{
		{"first answer, slow: taken anyway", 1_000, 1_300, 50_000, false, 48_850},
		{"precise answer replaces it", 2_000, 2_010, 50_905, false, 48_900},
		{"slow answer does not", 3_000, 3_200, 90_000, false, 48_900},
		{"late answer does, however slow: the end of the round trip", 4_000, 4_200, 3_000, true, -1_200},
		{"Redis behind", 5_000, 5_002, 4_001, false, -1_000},
	} {
		c.observe(tc.sent, tc.received, tc.rdx, tc.late)
		if got := c.offset.Load(); got != tc.offset {
			t.Errorf("%s: offset %d, want %d", tc.name, got, tc.offset)
		}
		if got := c.deadline(7_000, within); got != 7_000+400+tc.offset {
			t.Errorf("%s: deadline %d", tc.name, got)
		}
	}
	// As an argument the deadline counts from when it is written.
	d := &deadlineArg{clock: &c, within: within}
	local = local.Add(time.Second)
	if b, _ := d.MarshalBinary(); string(b) != strconv.FormatInt(1_001_000+400-1_000, 10) || d.sent != 1_001_000 {
		t.Errorf("deadline argument %s, sent %d", b, d.sent)
	}
	// The default clock reads the monotonic clock.
	m := monotonicClock()
	if a, b := m(), m(); b.Before(a) || b.Sub(a) > time.Second {
		t.Errorf("monotonic clock %v then %v", a, b)
	}
}
