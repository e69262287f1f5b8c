package cluster

import "testing"

func TestNeedsResync(t *testing.T) {
	const node = 3
	id := func(seq int64) int64 { return seq*IDStride + node }
	cases := []struct {
		name         string
		acked, start int64
		want         bool
	}{
		{"acknowledged nothing: not judged here", 0, id(500), false},
		{"the next event is the oldest kept", id(9), id(10), false},
		{"the next event is kept", id(40), id(10), false},
		{"acknowledged everything, outbox pruned empty", id(99), id(100), false},
		{"the next event was pruned", id(8), id(10), true},
		{"rewound to before seq 1, seq 1 pruned", id(0), id(2), true},
		{"rewound to before seq 1, seq 1 kept", id(0), id(1), false},
	}
	for _, c := range cases {
		if got := NeedsResync(c.acked, c.start); got != c.want {
			t.Errorf("%s: NeedsResync(%d, %d) = %v, want %v", c.name, c.acked, c.start, got, c.want)
		}
	}
}
