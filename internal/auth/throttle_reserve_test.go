package auth

import (
	"sync"
	"sync/atomic"
	"testing"
)

// reserveInParallel makes n parallel Reserve calls spread over throttles and
// returns how many went ahead.
func reserveInParallel(n int, throttles ...Throttle) int {
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, allowed, _ := throttles[i%len(throttles)].Reserve("root", "10.0.0.1"); allowed {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(ok.Load())
}

func TestReserveLetsAtMostTheLimitThroughInParallel(t *testing.T) {
	if got := reserveInParallel(100, NewLoginThrottle(nil)); got != pairLimit {
		t.Fatalf("%d of 100 parallel attempts went ahead, want %d", got, pairLimit)
	}
}

func TestSharedReserveLetsAtMostTheLimitThroughAcrossNodes(t *testing.T) {
	a, b := sharedThrottles(t)
	if got := reserveInParallel(100, a, b); got != pairLimit {
		t.Fatalf("%d of 100 parallel attempts on two nodes went ahead, want %d", got, pairLimit)
	}
}

// A successful login is refunded: it never counts towards the ip or
// username limits, and it clears the pair.
func TestRefundTakesTheAttemptBack(t *testing.T) {
	lt := NewLoginThrottle(nil)
	for range ipLimit * 2 {
		a, ok, _ := lt.Reserve("root", "10.0.0.1")
		if !ok {
			t.Fatal("a run of successful logins was throttled")
		}
		lt.Refund(a)
	}
	if len(lt.fails) != 0 {
		t.Fatalf("counters left after refunds: %v", lt.fails)
	}
}

func TestSharedRefundTakesTheAttemptBack(t *testing.T) {
	a, b := sharedThrottles(t)
	for i := range ipLimit * 2 {
		node := []*SharedLoginThrottle{a, b}[i%2]
		at, ok, _ := node.Reserve("root", "10.0.0.1")
		if !ok {
			t.Fatal("a run of successful logins was throttled")
		}
		node.Refund(at)
	}
}
