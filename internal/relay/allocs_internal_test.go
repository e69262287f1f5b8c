package relay

import "testing"

// leastAllocs is testing.AllocsPerRun's figure for f, the least of five
// tries. AllocsPerRun counts every allocation of the process while f runs,
// and this package's tests leave goroutines behind (ledgers, timers, pools
// of earlier gateways) that allocate at times of their own: one try saw
// one allocation per run in a loaded CI run of a function that makes
// none. f's own allocations show in every try; a neighbour's rarely in all.
func leastAllocs(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for try := 1; try < 5 && least > 0; try++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
