// Package samples summarises measured durations for the measuring
// programs (cmd/bench, cmd/clustersoak): the same percentile everywhere,
// so their figures compare.
package samples

import (
	"math"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted samples
// by the nearest-rank method: the smallest sample with at least p% of
// samples at or below it. No samples give 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Millis is d in milliseconds, for reports.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
