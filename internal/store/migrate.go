package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migration is one versioned schema or data step. Steps are applied in order,
// once each, and recorded in schema_migrations. A landed step is never edited:
// changes come as new steps appended to the list.
type migration struct {
	version string
	apply   func(s *Store, tx *gorm.DB) error
}

var migrations = []migration{
	{"0001_initial_schema", binaryCollation(migration0001)},
	{"0002_seed_group_prices", seedGroupPrices},
	{"0003_reservations", binaryCollation(migration0003)},
	{"0004_billing_dead_letters", binaryCollation(migration0004)},
	{"0005_idempotency_keys", binaryCollation(migration0005)},
	{"0006_billing_leases", binaryCollation(migration0006)},
	{"0007_error_logs", binaryCollation(migration0007)},
	{"0008_plans", binaryCollation(migration0008)},
	{"0009_plan_usage", binaryCollation(migration0009)},
	{"0010_plan_usage_leases", binaryCollation(migration0010)},
	{"0011_orders", binaryCollation(migration0011)},
	{"0013_usage_rollups", binaryCollation(migration0013)},
	{"0014_cluster_nodes", binaryCollation(migration0014)},
	{"0015_cluster_replication", binaryCollation(migration0015)},
	{"0016_cluster_failed_events", binaryCollation(migration0016)},
	{"0017_cache_tier_pricing", binaryCollation(migration0017)},
	{"0018_token_rate_limits", binaryCollation(migration0018)},
	{"0020_usage_cubes", binaryCollation(migration0020)},
	{"0021_config_state", binaryCollation(migration0021)},
	{"0022_plan_usage_slices", binaryCollation(migration0022)},
	{"0023_cluster_join_tokens", binaryCollation(migration0023)},
	{"0024_channel_setting", binaryCollation(migration0024)},
	{"0026_cluster_grants", binaryCollation(migration0026)},
	{"0027_received_payments", binaryCollation(migration0027)},
	{"0028_payment_exceptions", binaryCollation(migration0028)},
	{"0029_channel_other", binaryCollation(migration0029)},
	{"0030_key_pools_output_limits", binaryCollation(migration0030)},
	{"0031_account_codes", binaryCollation(migration0031)},
	{"0032_user_sign_in_and_invites", binaryCollation(migration0032)},
	{"0034_audit_logs", binaryCollation(migration0034)},
	{"0035_drop_logs_type_index", binaryCollation(migration0035)},
}

// binaryCollation runs a schema step with MySQL's binary collation for the
// tables it creates, so names compare byte for byte as on SQLite and
// PostgreSQL ("GPT-4o" and "gpt-4o" are different models).
func binaryCollation(step func(tx *gorm.DB) error) func(s *Store, tx *gorm.DB) error {
	return func(s *Store, tx *gorm.DB) error {
		if s.dialect == MySQL {
			tx = tx.Set("gorm:table_options", "CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
		}
		return step(tx)
	}
}

type schemaMigration struct {
	Version   string `gorm:"primaryKey;size:64"`
	AppliedAt int64  `gorm:"not null"`
}

func (schemaMigration) TableName() string { return "schema_migrations" }

// migrate applies the pending steps. On PostgreSQL each step holds an
// advisory lock, so nodes sharing one database can start together; there and
// on SQLite the step and its record commit together. MySQL commits DDL
// implicitly, so a step there must be idempotent (AutoMigrate is).
func (s *Store) migrate(ctx context.Context) error {
	db := s.db.WithContext(ctx)
	if err := db.AutoMigrate(&schemaMigration{}); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range migrations {
		err := s.transaction(db, func(tx *gorm.DB) error {
			if s.dialect == Postgres {
				if err := tx.Exec("SELECT pg_advisory_xact_lock(7305581)").Error; err != nil {
					return err
				}
			}
			var done int64
			if err := tx.Model(&schemaMigration{}).Where("version = ?", m.version).Count(&done).Error; err != nil {
				return err
			}
			if done > 0 {
				return nil
			}
			if err := m.apply(s, tx); err != nil {
				return err
			}
			s.log.Info("applied migration", "version", m.version)
			return tx.Create(&schemaMigration{Version: m.version, AppliedAt: time.Now().Unix()}).Error
		})
		if err != nil && !isUniqueViolation(err) { // a concurrent node applied it first
			return fmt.Errorf("migrate %s: %w", m.version, err)
		}
	}
	return nil
}

// seedGroupPrices gives the default, vip and svip groups a 1.0 discount on
// first start. As a migration it runs once: a group an operator deletes later
// stays deleted.
func seedGroupPrices(s *Store, db *gorm.DB) error {
	now := time.Now().Unix()
	tx := &Tx{db: db, s: s}
	for _, g := range []string{"default", "vip", "svip"} {
		id, err := tx.allocIDs("group_prices", 1)
		if err != nil {
			return err
		}
		gp := GroupPrice{ID: id, GroupName: g, Discount: 1, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&gp).Error; err != nil && !isUniqueViolation(err) {
			return err
		}
	}
	return nil
}
