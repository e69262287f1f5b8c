package store

import (
	"context"
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

// clampMoneyColumns brings balances and counters that are beyond the money
// limits back within them. Such values were possible before the limits (a
// top-up of 9223372036854775807, a counter overflowed by a price of 1e308;
// on SQLite an overflow stores a REAL), and one such row made every read of
// its table fail, the start of the process among them. On a sound database
// it changes nothing; it runs at every start because a restored backup can
// bring such rows back too.
func (s *Store) clampMoneyColumns(ctx context.Context) error {
	for _, c := range []struct {
		table, col string
		max        int64
	}{
		{"users", "quota", pricing.MaxBalance},
		{"users", "used_quota", pricing.MaxCounter},
		{"tokens", "remain_quota", pricing.MaxBalance},
		{"tokens", "used_quota", pricing.MaxCounter},
		{"channels", "used_quota", pricing.MaxCounter},
		{"redemptions", "quota", pricing.MaxBalance},
	} {
		// The limits are constants, written into the statement: PostgreSQL
		// cannot infer the type of a parameter in a CASE branch.
		q := fmt.Sprintf("UPDATE %[1]s SET %[2]s = CASE WHEN %[2]s > 0 THEN %[3]d ELSE %[4]d END WHERE %[2]s > %[3]d OR %[2]s < %[4]d",
			c.table, c.col, c.max, -pricing.MaxCounter)
		res := s.db.WithContext(ctx).Exec(q)
		if res.Error != nil {
			return fmt.Errorf("clamp %s.%s: %w", c.table, c.col, res.Error)
		}
		if res.RowsAffected > 0 {
			s.log.Warn("clamped money values beyond the limits", "table", c.table, "column", c.col, "rows", res.RowsAffected)
		}
	}
	return nil
}
