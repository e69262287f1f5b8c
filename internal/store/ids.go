package store

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// idStride is the cluster's id modulus: a row created on node k gets an id
// with id % idStride == k, so ids from different nodes never collide
// (docs/architecture.md, Cluster). Node 0 is a single-node install; node ids 1..49 are cluster
// nodes, so a single node can later join a cluster without renumbering.
const idStride = 50

// allocIDs reserves n consecutive row ids for table and returns the first;
// the others follow at steps of idStride. The counter row is updated inside
// the caller's transaction, so several processes sharing one database (the
// stateless-nodes deployment) never hand out the same id, and a rolled-back
// transaction returns its ids.
func (tx *Tx) allocIDs(table string, n int) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("allocate ids for %s: count %d", table, n)
	}
	res := tx.db.Exec("UPDATE id_sequences SET next_value = next_value + ? WHERE name = ?", n, table)
	if res.Error != nil {
		return 0, fmt.Errorf("allocate ids for %s: %w", table, res.Error)
	}
	if res.RowsAffected == 0 {
		// A table without a counter row yet: migrations create the rows of
		// the tables they add, so this is only a fallback.
		err := tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&idSequence{Name: table, Next: 0}).Error
		if err == nil {
			err = tx.db.Exec("UPDATE id_sequences SET next_value = next_value + ? WHERE name = ?", n, table).Error
		}
		if err != nil {
			return 0, fmt.Errorf("allocate ids for %s: %w", table, err)
		}
	}
	var last int64
	if err := tx.db.Raw("SELECT next_value FROM id_sequences WHERE name = ?", table).Scan(&last).Error; err != nil {
		return 0, fmt.Errorf("allocate ids for %s: %w", table, err)
	}
	firstSeq := last - int64(n) + 1
	return firstSeq*idStride + tx.s.nodeID, nil
}

// nthID is the id k steps after first (see allocIDs).
func nthID(first int64, k int) int64 { return first + int64(k)*idStride }

// sequenceValue is the last sequence number handed out for name (0: none).
func sequenceValue(db *gorm.DB, name string) (int64, error) {
	var seq []idSequence
	if err := db.Where("name = ?", name).Limit(1).Find(&seq).Error; err != nil || len(seq) == 0 {
		return 0, err
	}
	return seq[0].Next, nil
}

// raiseSequence makes name's counter at least seq.
func (tx *Tx) raiseSequence(name string, seq int64) error {
	if seq <= 0 {
		return nil
	}
	if err := tx.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&idSequence{Name: name, Next: 0}).Error; err != nil {
		return err
	}
	return tx.db.Model(&idSequence{}).Where("name = ? AND next_value < ?", name, seq).Update("next_value", seq).Error
}
