package replicate

import "testing"

func TestRewindTo(t *testing.T) {
	const self = 3
	id := func(seq int64) int64 { return seq*50 + self }
	for _, tc := range []struct {
		name            string
		expected, first int64
		want            int64
		ok              bool
	}{
		{"the peer needs an earlier event", id(4), id(9), id(3), true},
		{"the peer needs seq 1", id(1), id(9), id(0), true},
		{"the event just before the batch", id(8), id(9), id(7), true},
		{"the batch's first event: no progress, a failure", id(9), id(9), 0, false},
		{"an event after the batch: never forward", id(20), id(9), 0, false},
		{"another node's id", 4*50 + 7, id(9), 0, false},
		{"none", 0, id(9), 0, false},
		{"negative", -47, id(9), 0, false},
	} {
		got, ok := rewindTo(tc.expected, tc.first, self)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: rewindTo(%d, %d) = %d, %v; want %d, %v", tc.name, tc.expected, tc.first, got, ok, tc.want, tc.ok)
		}
	}
}
