package store

import (
	"fmt"

	"github.com/modelgate/modelgate/internal/pricing"
)

// saturatingAdd is the SQL of col + ? that stops at pricing.MaxCounter. It
// takes the added amount twice. Usage counters only grow, so without a cap
// a channel's used_quota would in the end overflow: SQLite would store a
// REAL no reader can scan, PostgreSQL and MySQL would fail the settlement.
// The comparison subtracts from the constant, so it cannot overflow itself
// (the added amount is a sum of costs each at most pricing.MaxCallCost).
func saturatingAdd(col string) string {
	return fmt.Sprintf("CASE WHEN %s > %d - ? THEN %d ELSE %s + ? END", col, pricing.MaxCounter, pricing.MaxCounter, col)
}
