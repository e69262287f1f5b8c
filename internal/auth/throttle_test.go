package auth_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/auth"
)

func newClock() *apptest.Clock { return apptest.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

func fail(lt *auth.LoginThrottle, n int, username, ip string) {
	for range n {
		lt.Failed(username, ip)
	}
}

func wantAllow(t *testing.T, lt *auth.LoginThrottle, username, ip string, want bool) time.Duration {
	t.Helper()
	ok, retry := lt.Allow(username, ip)
	if ok != want {
		t.Fatalf("Allow(%q, %q) = %v (retry %v); want %v", username, ip, ok, retry, want)
	}
	if ok != (retry == 0) {
		t.Fatalf("Allow(%q, %q) = %v with retry %v; want retry > 0 exactly when refused", username, ip, ok, retry)
	}
	return retry
}

func TestThrottlePairLimit(t *testing.T) {
	c := newClock()
	lt := auth.NewLoginThrottle(c.Now)
	fail(lt, 4, "root", "1.1.1.1")
	wantAllow(t, lt, "root", "1.1.1.1", true)
	lt.Failed("root", "1.1.1.1")

	if retry := wantAllow(t, lt, "root", "1.1.1.1", false); retry != 15*time.Minute {
		t.Errorf("retryAfter = %v; want 15m", retry)
	}
	wantAllow(t, lt, "ROOT", "1.1.1.1", false) // usernames ignore case
	wantAllow(t, lt, "root", "2.2.2.2", true)  // the owner elsewhere is not locked out
	wantAllow(t, lt, "alice", "1.1.1.1", true) // other accounts from that ip still may try
}

func TestThrottleWindowSlides(t *testing.T) {
	c := newClock()
	lt := auth.NewLoginThrottle(c.Now)
	for range 5 { // failures at 0, 1, 2, 3, 4 minutes
		lt.Failed("Root", "1.1.1.1")
		c.Advance(time.Minute)
	}
	// Now at 5m; the failure at 0m leaves the window at 15m.
	if retry := wantAllow(t, lt, "root", "1.1.1.1", false); retry != 10*time.Minute {
		t.Errorf("retryAfter = %v; want 10m", retry)
	}
	c.Advance(10*time.Minute - time.Nanosecond)
	wantAllow(t, lt, "root", "1.1.1.1", false)
	c.Advance(time.Nanosecond)
	wantAllow(t, lt, "root", "1.1.1.1", true)

	// Sliding, not resetting: one more failure refills the window.
	lt.Failed("root", "1.1.1.1")
	if retry := wantAllow(t, lt, "root", "1.1.1.1", false); retry != time.Minute {
		t.Errorf("retryAfter = %v; want 1m (until the 1m failure leaves)", retry)
	}
	c.Advance(15 * time.Minute)
	wantAllow(t, lt, "root", "1.1.1.1", true)
}

func TestThrottleIPLimit(t *testing.T) {
	c := newClock()
	lt := auth.NewLoginThrottle(c.Now)
	for i := range 30 {
		lt.Failed(fmt.Sprintf("user%d", i), "1.1.1.1")
	}
	if retry := wantAllow(t, lt, "fresh", "1.1.1.1", false); retry != 15*time.Minute {
		t.Errorf("retryAfter = %v; want 15m", retry)
	}
	wantAllow(t, lt, "fresh", "2.2.2.2", true)

	// Success clears the pair only, not the ip counter.
	lt.Succeeded("user0", "1.1.1.1")
	wantAllow(t, lt, "fresh", "1.1.1.1", false)
	c.Advance(15 * time.Minute)
	wantAllow(t, lt, "fresh", "1.1.1.1", true)
}

func TestThrottleUsernameLimit(t *testing.T) {
	c := newClock()
	lt := auth.NewLoginThrottle(c.Now)
	for i := range 49 {
		lt.Failed("root", fmt.Sprintf("10.0.0.%d", i))
	}
	wantAllow(t, lt, "root", "192.168.1.1", true)
	lt.Failed("Root", "10.0.1.0")
	wantAllow(t, lt, "root", "192.168.1.1", false)
	wantAllow(t, lt, "alice", "192.168.1.1", true)
	c.Advance(15 * time.Minute)
	wantAllow(t, lt, "root", "192.168.1.1", true)
}

func TestThrottleSuccessResetsPair(t *testing.T) {
	lt := auth.NewLoginThrottle(newClock().Now)
	fail(lt, 4, "root", "1.1.1.1")
	lt.Succeeded("ROOT", "1.1.1.1")
	fail(lt, 4, "root", "1.1.1.1")
	wantAllow(t, lt, "root", "1.1.1.1", true)
	lt.Failed("root", "1.1.1.1")
	wantAllow(t, lt, "root", "1.1.1.1", false)
}

func TestThrottleNilClock(t *testing.T) {
	lt := auth.NewLoginThrottle(nil)
	fail(lt, 5, "root", "1.1.1.1")
	retry := wantAllow(t, lt, "root", "1.1.1.1", false)
	if retry <= 14*time.Minute || retry > 15*time.Minute {
		t.Errorf("retryAfter = %v; want just under 15m", retry)
	}
}

func TestThrottleConcurrent(t *testing.T) {
	c := newClock()
	lt := auth.NewLoginThrottle(c.Now)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				user, ip := fmt.Sprintf("u%d", i%40), fmt.Sprintf("10.%d.0.%d", g, i%7)
				if ok, _ := lt.Allow(user, ip); ok {
					lt.Failed(user, ip)
				}
				if i%50 == 0 {
					lt.Succeeded(user, ip)
					c.Advance(time.Second)
				}
			}
		})
	}
	// Exactly five failures on one pair from many goroutines block it: no
	// update is lost.
	for range 5 {
		wg.Go(func() { lt.Failed("target", "9.9.9.9") })
	}
	wg.Wait()
	wantAllow(t, lt, "target", "9.9.9.9", false)
}
