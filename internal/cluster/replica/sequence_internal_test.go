package replica

import (
	"testing"
	"time"
)

func TestCheckSequence(t *testing.T) {
	const src = 7
	id := func(seq int64) int64 { return seq*idStride + src }
	evs := func(ids ...int64) []Event {
		out := make([]Event, len(ids))
		for i, v := range ids {
			out[i] = Event{ID: v}
		}
		return out
	}
	own := int64(3*idStride + 1) // an event of the receiver, node 1: not in the sequence
	for _, tc := range []struct {
		name   string
		last   int64
		events []Event
		want   int64 // 0: accepted
	}{
		{"first batch of an origin starts at seq 1", 0, evs(id(1), id(2), id(3)), 0},
		{"first batch of an origin skipping seq 1", 0, evs(id(2), id(3)), id(1)},
		{"continues the mark", id(4), evs(id(5), id(6)), 0},
		{"re-delivered whole", id(6), evs(id(5), id(6)), 0},
		{"re-delivered in part, then new", id(5), evs(id(4), id(5), id(6), id(7)), 0},
		{"a gap after the mark", id(4), evs(id(6), id(7)), id(5)},
		{"a gap inside the batch", id(4), evs(id(5), id(7)), id(5)},
		{"a lower id later in the batch", id(4), evs(id(5), id(6), id(2)), id(5)},
		{"the same event twice", id(4), evs(id(5), id(5)), id(5)},
		{"descending, all already applied", id(9), evs(id(6), id(5)), id(10)},
		{"a forged high id", id(4), evs(id(1_000_000)), id(5)},
		{"the receiver's own events do not count", id(4), evs(own, id(5), own+idStride, id(6)), 0},
		{"only the receiver's own events", id(4), evs(own), 0},
		{"empty", id(4), nil, 0},
	} {
		got, ok := checkSequence(src, tc.last, tc.events)
		if ok != (tc.want == 0) || got != tc.want {
			t.Errorf("%s: checkSequence = %d, %v; want %d", tc.name, got, ok, tc.want)
		}
	}
}

func TestNextEventID(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		node int
		want int64
	}{
		{0, 7, 57},
		{57, 7, 107},
		{49*idStride + 3, 3, 50*idStride + 3},
	} {
		if got := NextEventID(tc.id, tc.node); got != tc.want {
			t.Errorf("NextEventID(%d, %d) = %d, want %d", tc.id, tc.node, got, tc.want)
		}
	}
}

// A peer's time far in the future moves the clock no further than the
// bound past the wall clock (issue 24 §2: an event dated 2100).
func TestHybridClockBoundsWhatItFollows(t *testing.T) {
	var c hybridClock
	c.setMaxAhead(time.Minute)
	c.observe(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	bound := time.Now().Add(time.Minute + time.Second).UnixMicro()
	if got := c.next(0); got > bound {
		t.Fatalf("next after observing 2100 = %d, past now + 1 min (%d)", got, bound)
	}
	// Within the bound it is followed as before.
	near := time.Now().Add(30 * time.Second).UnixMicro()
	c.observe(near)
	if got := c.next(0); got <= near {
		t.Fatalf("next after observing now+30s = %d, want past %d", got, near)
	}
	// The zero value bounds by the default.
	var d hybridClock
	d.observe(time.Now().Add(time.Hour).UnixMicro())
	if got := d.next(0); got > time.Now().Add(DefaultMaxClockSkew+time.Second).UnixMicro() {
		t.Fatalf("default bound not applied: %d", got)
	}
}
