package store

import "gorm.io/gorm"

// migration0035 drops idx_logs_type, the index of logs on type alone.
// idx_log_type_time (type, created_at) serves every query that filters on
// the type, and the rollup and cube rebuilds now page through it by
// (created_at, id) instead of by id (eachConsumeLogBatch). Every consume
// log the gateway writes paid for one more B-tree insert: about a tenth of
// the cost of a settlement's log insert on SQLite (issue 32,
// docs/performance.md).
func migration0035(db *gorm.DB) error {
	m := db.Migrator()
	// Only when present: MySQL commits DDL at once, so a step interrupted
	// there must be able to run again.
	if !m.HasIndex(&v35Log{}, "idx_logs_type") {
		return nil
	}
	return m.DropIndex(&v35Log{}, "idx_logs_type")
}

// v35Log names the index this step drops.
type v35Log struct {
	Type int `gorm:"not null;index"`
}

func (v35Log) TableName() string { return "logs" }
