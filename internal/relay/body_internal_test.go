package relay

import "testing"

// A request buffer's trip through the pool costs no allocation once warm
// (putBody reuses the boxes getBody empties).
func TestBodyPoolAllocationFree(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts of pooled code are random under the race detector (sync.Pool drops puts)")
	}
	rl := &Relay{}
	rl.putBody(rl.getBody())
	if n := leastAllocs(100, func() { rl.putBody(append(rl.getBody(), 'x')) }); n >= 1 {
		t.Errorf("getBody+putBody: %v allocations, want 0", n)
	}
}
