package pricing

// Money limits (docs/decisions/money-limits.md). Every amount of money that
// enters through /api is bounded by these, and every balance and counter
// update stays within them, so no sum can overflow a 64-bit column: SQLite
// would silently turn the row into a REAL that no reader can scan, and
// PostgreSQL and MySQL would fail the statement (for a settlement, every
// later batch with it).
const (
	// MaxBalance is the largest balance a user or a key may hold, and so the
	// largest single credit, debit or redemption code: 1e15 quota, 1e9 CNY.
	MaxBalance int64 = 1_000_000_000_000_000
	// MaxPrice bounds a model price: CNY per million tokens, or per call.
	MaxPrice = 1_000_000
	// MaxCallCost is the most one call is ever billed: 1e12 quota, 1e6 CNY.
	// A cost above it (absurd token counts from an upstream, a huge price
	// times a huge discount) is billed at this cap.
	MaxCallCost int64 = 1_000_000_000_000
	// MaxCounter is where the used_quota counters of users, keys and
	// channels saturate: 1e18, far below MaxInt64, so the comparison that
	// saturates them cannot overflow either.
	MaxCounter int64 = 1_000_000_000_000_000_000
)
