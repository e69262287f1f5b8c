package replica

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/store"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ncruces/go-sqlite3"
	"gorm.io/gorm/clause"
)

// isDataError recognises a statement that failed because of the values it
// was given — out of range, of the wrong type, too long, a constraint, a
// column this schema lacks — as opposed to a database that is unavailable
// or busy. Applying the same event again would fail the same way.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	var myErr *mysqldriver.MySQLError
	var liteErr *sqlite3.Error
	switch {
	case errors.As(err, &pgErr):
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		return class == "22" || class == "23" || class == "42"
	case errors.As(err, &myErr):
		switch myErr.Number {
		case 1048, 1054, 1062, 1146, 1264, 1265, 1292, 1366, 1406, 1451, 1452, 3819:
			return true
		}
		return false
	case errors.As(err, &liteErr):
		switch liteErr.Code() {
		case sqlite3.CONSTRAINT, sqlite3.MISMATCH, sqlite3.TOOBIG, sqlite3.RANGE, sqlite3.ERROR:
			return true
		}
		return false
	}
	// pgx refuses a value it cannot encode before sending the statement,
	// with an error of no type of its own.
	return strings.Contains(err.Error(), "failed to encode args")
}

// failedEvent is a row of cluster_failed_events.
type failedEvent struct {
	EventID    int64 `gorm:"primaryKey;autoIncrement:false"`
	NodeID     int
	TableName_ string `gorm:"column:table_name"`
	Operation  string
	Kind       string
	PrimaryKey int64
	RowKey     string
	Data       string
	TimeUS     int64 `gorm:"column:time_us"`
	Error      string
	CreatedAt  int64
}

func (failedEvent) TableName() string { return "cluster_failed_events" }

// keepFailed records an event that cannot apply here because of its
// values, whole, so the rest of its node's stream goes on: a poison event
// must not stop replication from that node for good. The error text holds
// no secret (the driver names the column and the value's kind).
func (tx *txn) keepFailed(ev Event, cause error) error {
	msg := cause.Error()
	if len(msg) > 1000 {
		msg = strings.ToValidUTF8(msg[:1000], "")
	}
	return tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&failedEvent{EventID: ev.ID, NodeID: ev.Node(),
		TableName_: ev.Table, Operation: ev.Op, Kind: ev.Kind, PrimaryKey: ev.PK, RowKey: ev.Key, Data: string(ev.Data),
		TimeUS: ev.TimeUS, Error: msg, CreatedAt: time.Now().Unix()}).Error
}

// FailedEvents counts the peers' events kept because they could not apply
// here (cluster_failed_events).
func (s *Replica) FailedEvents(ctx context.Context) (int64, error) {
	var n int64
	err := s.st.Read(ctx).Model(&failedEvent{}).Count(&n).Error
	return n, store.Wrap("count failed cluster events", err)
}
