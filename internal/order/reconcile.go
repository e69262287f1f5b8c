package order

import "time"

// querySteps are the ages of a pending wallet order at which the
// reconciler asks the provider for its trade's state (issue 26, §2): soon
// after the payer could have paid, then further apart, and every half
// hour after the last until the order expires.
var querySteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// QueryStep is the reconciliation step an order of age has reached: -1
// before the first (nothing to ask yet), then 0, 1, … growing by one at
// each of 1, 2, 5, 10 and 30 minutes and at every further 30 minutes. The
// reconciler queries an order when its step is greater than the step of
// its last query, so a sweep that runs late queries once, not once per
// missed step.
func QueryStep(age time.Duration) int {
	for i, s := range querySteps {
		if age < s {
			return i - 1
		}
	}
	last := querySteps[len(querySteps)-1]
	return len(querySteps) - 1 + int((age-last)/(30*time.Minute))
}
