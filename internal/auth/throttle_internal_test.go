package auth

import (
	"fmt"
	"testing"
	"time"
)

// Memory stays bounded under a flood of distinct usernames and ips.
func TestThrottleMapCapped(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	lt := NewLoginThrottle(func() time.Time { return now })
	lt.maxKeys = 300
	for i := range 5000 {
		lt.Failed(fmt.Sprintf("user%d", i), fmt.Sprintf("ip%d", i))
		if len(lt.fails) > lt.maxKeys {
			t.Fatalf("after %d failures the map holds %d keys; cap is %d", i+1, len(lt.fails), lt.maxKeys)
		}
	}
}

// Stale entries go on the periodic sweep even if their keys are never seen again.
func TestThrottlePrunes(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	lt := NewLoginThrottle(func() time.Time { return now })
	for i := range 100 {
		lt.Failed(fmt.Sprintf("user%d", i), "1.1.1.1")
	}
	now = now.Add(throttleWindow)
	for range pruneEvery {
		lt.Allow("someone", "2.2.2.2")
	}
	if n := len(lt.fails); n != 0 {
		t.Errorf("after the window and %d calls the map holds %d keys; want 0", pruneEvery, n)
	}
}

// A failure count never keeps more times than its rule can use.
func TestThrottleKeepsAtMostLimit(t *testing.T) {
	lt := NewLoginThrottle(nil)
	for range 200 {
		lt.Failed("root", "1.1.1.1")
	}
	for k, ts := range lt.fails {
		if len(ts) != k.limit() {
			t.Errorf("%c counter holds %d times; want %d", k.kind, len(ts), k.limit())
		}
	}
}

// Long usernames are clipped so they cannot grow memory, and still compare
// equal to themselves.
func TestThrottleClipsKeys(t *testing.T) {
	lt := NewLoginThrottle(nil)
	long := string(make([]byte, 10_000))
	fail := func() { lt.Failed(long, "1.1.1.1") }
	for range pairLimit {
		fail()
	}
	if ok, _ := lt.Allow(long, "1.1.1.1"); ok {
		t.Error("long username not throttled")
	}
	for k := range lt.fails {
		if len(k.username) > maxKeyPart {
			t.Errorf("key username is %d bytes; want at most %d", len(k.username), maxKeyPart)
		}
	}
}
