package main

import (
	"math"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted samples by
// the nearest-rank method, as cmd/bench does: the smallest sample with at
// least p% of samples at or below it. No samples give 0.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// millis is d in milliseconds, for the report.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
