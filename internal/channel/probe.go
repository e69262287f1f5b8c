package channel

import "time"

// TestResult is the outcome of a channel test: a minimal real call sent
// through the channel by the relay.
type TestResult struct {
	Status  int // the upstream's HTTP status; 0 when it did not answer
	Elapsed time.Duration
	Detail  string // the start of a failed answer or the transport error, key masked
	// Keys is the outcome per key of the channel's pool, in pool order
	// (the fields above are the first failing key's, else the first's).
	Keys []KeyTest
}

// KeyTest is the test outcome of one key of a channel's pool.
type KeyTest struct {
	Index   int  // 0-based position in the pool
	Retired bool // taken out after a refusal (DisabledKey)
	Status  int
	Elapsed time.Duration
	Detail  string
}

// OK reports whether the upstream answered the test call successfully.
func (r TestResult) OK() bool { return r.Status == 200 }
