package replica

import (
	"testing"
	"time"
)

func TestNewerVersion(t *testing.T) {
	for _, tc := range []struct {
		t     int64
		node  int
		vt    int64
		vnode int
		want  bool
	}{
		{2, 1, 1, 9, true},  // later time wins whatever the nodes
		{1, 9, 2, 1, false}, // earlier time loses
		{5, 3, 5, 2, true},  // a tie goes to the higher node
		{5, 2, 5, 3, false}, // and not to the lower one
		{5, 2, 5, 2, false}, // the same version is not newer: applying it again changes nothing
		{1, 1, 0, 0, true},  // any write beats a row never versioned
	} {
		if got := newer(tc.t, tc.node, tc.vt, tc.vnode); got != tc.want {
			t.Errorf("newer(%d,%d over %d,%d) = %v, want %v", tc.t, tc.node, tc.vt, tc.vnode, got, tc.want)
		}
	}
}

func TestHybridClockPassesWhatItSaw(t *testing.T) {
	var c hybridClock
	a := c.next(0)
	if b := c.next(0); b <= a {
		t.Fatalf("clock went back or stood: %d then %d", a, b)
	}
	// A row version from a node whose clock runs an hour ahead: the next
	// local write of that row must still be newer.
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if got := c.next(ahead); got <= ahead {
		t.Fatalf("next(%d) = %d: a local write would lose to the version it overwrites", ahead, got)
	}
	// A peer's event seen makes every later local time pass it (within
	// the bound of DefaultMaxClockSkew past the wall clock).
	seen := time.Now().Add(time.Minute).UnixMicro()
	c.observe(seen)
	if got := c.next(0); got <= seen {
		t.Fatalf("next after observing %d = %d", seen, got)
	}
}
