package store

import (
	"database/sql"
	"sync/atomic"

	"gorm.io/gorm"
)

// Round trips: every statement the store sends to the database is counted,
// so a measure (cmd/bench, /metrics) can tell how many a relay call costs.
// What is counted is statements, not network packets: a driver may take
// more than one exchange for one of them (go-sql-driver/mysql prepares a
// statement with arguments, runs it and closes it, when a DSN turns
// interpolateParams off), and on SQLite they are calls into the library, not trips over a
// network. The LISTEN connection of notify.go is not counted; the direct
// statements of direct.go count themselves.

// roundTripCounter counts the statements sent through one Store.
type roundTripCounter struct{ n atomic.Int64 }

// countStatement is registered after each of gorm's statement-sending
// callbacks. A statement counts when it was built (gorm builds it just
// before sending; an earlier callback's error leaves it empty) and not a dry
// run. One atomic add, no allocation: it runs on every query.
func (c *roundTripCounter) countStatement(db *gorm.DB) {
	if db.DryRun || db.Statement == nil || db.Statement.SQL.Len() == 0 {
		return
	}
	c.n.Add(1)
}

// registerRoundTrips hooks the counter into db's callback chains, after
// gorm's own: query (Find, First, Count, Scan), create, update, delete, row
// (Row, Rows) and raw (Exec, and Raw with Scan).
func (s *Store) registerRoundTrips(db *gorm.DB) error {
	cb := db.Callback()
	const name = "modelgate:round_trips"
	for _, err := range []error{
		cb.Query().After("gorm:query").Register(name, s.roundTrips.countStatement),
		cb.Create().After("gorm:create").Register(name, s.roundTrips.countStatement),
		cb.Update().After("gorm:update").Register(name, s.roundTrips.countStatement),
		cb.Delete().After("gorm:delete").Register(name, s.roundTrips.countStatement),
		cb.Row().After("gorm:row").Register(name, s.roundTrips.countStatement),
		cb.Raw().After("gorm:raw").Register(name, s.roundTrips.countStatement),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// transaction is db.Transaction counting its BEGIN and its COMMIT or
// ROLLBACK (gorm sends them through database/sql, not through callbacks).
// Every transaction of the store goes through it.
func (s *Store) transaction(db *gorm.DB, fn func(db *gorm.DB) error, opts ...*sql.TxOptions) error {
	s.roundTrips.n.Add(2)
	return db.Transaction(fn, opts...)
}

// RoundTrips is how many statements this Store has sent to its database
// since it was opened, transactions' BEGIN and COMMIT/ROLLBACK included
// (the metric modelgate_db_round_trips_total).
func (s *Store) RoundTrips() int64 { return s.roundTrips.n.Load() }
