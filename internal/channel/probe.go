package channel

import "time"

// TestResult is the outcome of a channel test: a minimal real call sent
// through the channel by the relay.
type TestResult struct {
	Status  int // the upstream's HTTP status; 0 when it did not answer
	Elapsed time.Duration
	Detail  string // the start of a failed answer or the transport error, key masked
}

// OK reports whether the upstream answered the test call successfully.
func (r TestResult) OK() bool { return r.Status == 200 }
