package order

import (
	"testing"
	"time"
)

func TestQueryStep(t *testing.T) {
	for _, c := range []struct {
		age  time.Duration
		want int
	}{
		{0, -1}, {59 * time.Second, -1}, {time.Minute, 0}, {119 * time.Second, 0}, {2 * time.Minute, 1},
		{4 * time.Minute, 1}, {5 * time.Minute, 2}, {10 * time.Minute, 3}, {29 * time.Minute, 3},
		{30 * time.Minute, 4}, {59 * time.Minute, 4}, {60 * time.Minute, 5}, {90 * time.Minute, 6},
		{119 * time.Minute, 6}, {-time.Minute, -1},
	} {
		if got := QueryStep(c.age); got != c.want {
			t.Errorf("QueryStep(%v) = %d, want %d", c.age, got, c.want)
		}
	}
}
