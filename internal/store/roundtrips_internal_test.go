package store

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"
)

// The round-trip counter moves by the statements each operation sends:
// a transaction's BEGIN and COMMIT (or ROLLBACK) count too.
func TestRoundTripsCountStatements(t *testing.T) {
	onEachEngine(t, func(t *testing.T, ctx context.Context, s *Store) {
		steps := []struct {
			name string
			want int64
			run  func() error
		}{
			{"write transaction with one statement: BEGIN, UPDATE, COMMIT", 3, func() error {
				return s.InTx(ctx, func(tx *Tx) error {
					return tx.db.Exec("UPDATE users SET quota = quota WHERE id = ?", -1).Error
				})
			}},
			{"rolled back transaction: BEGIN, SELECT, ROLLBACK", 3, func() error {
				err := s.InTx(ctx, func(tx *Tx) error {
					var n int64
					if err := tx.db.Model(&User{}).Count(&n).Error; err != nil {
						return err
					}
					return errors.New("give up")
				})
				if err == nil {
					return errors.New("the transaction did not fail")
				}
				return nil
			}},
			{"read transaction with two queries", 4, func() error {
				return s.readTx(ctx, func(db *gorm.DB) error {
					var users []User
					if err := db.Limit(1).Find(&users).Error; err != nil {
						return err
					}
					var one int
					return db.Raw("SELECT 1").Scan(&one).Error
				})
			}},
			{"create and delete outside a transaction", 2, func() error {
				o := Option{Key: "round-trip-test", Value: "x"}
				if err := s.db.WithContext(ctx).Create(&o).Error; err != nil {
					return err
				}
				return s.db.WithContext(ctx).Delete(&o).Error
			}},
			{"row", 1, func() error {
				var one int
				return s.db.WithContext(ctx).Raw("SELECT 1").Row().Scan(&one)
			}},
		}
		for _, st := range steps {
			before := s.RoundTrips()
			if err := st.run(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if got := s.RoundTrips() - before; got != st.want {
				t.Errorf("%s: %d round trips, want %d", st.name, got, st.want)
			}
		}
	})
}

// Counting a statement is one atomic add: nothing is allocated on the
// path every query takes.
func TestCountStatementAllocatesNothing(t *testing.T) {
	var c roundTripCounter
	db := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{}}
	db.Statement.SQL.WriteString("SELECT 1")
	if n := testing.AllocsPerRun(1000, func() { c.countStatement(db) }); n != 0 {
		t.Errorf("countStatement allocates %v times per call", n)
	}
	if c.n.Load() < 1000 {
		t.Errorf("counted %d statements, want at least 1000", c.n.Load())
	}
	empty := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{}}
	before := c.n.Load()
	c.countStatement(empty)
	if c.n.Load() != before {
		t.Error("a statement never built (an earlier callback failed) was counted")
	}
}
