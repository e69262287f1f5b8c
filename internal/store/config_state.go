package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// configTables are the tables whose rows nodes keep in memory: API keys and
// their users, routing (channels, abilities), prices, options, plans and
// subscriptions. A change to one of them, other than a balance or usage
// counter moving, is a configuration change: it moves the config version
// and is pushed to the other nodes sharing the database.
var configTables = map[string]bool{
	"tokens": true, "users": true, "channels": true, "abilities": true, "model_prices": true,
	"group_prices": true, "options": true, "plans": true, "user_plans": true,
}

// IsConfigChange reports whether c changes what nodes cache.
func IsConfigChange(c Change) bool { return !c.Counters && configTables[c.Table] }

// ConfigCommit is one committed transaction that changed configuration.
type ConfigCommit struct {
	// Version is the config version the transaction committed (0 when the
	// config_state row is missing).
	Version int64
	// Changes are its configuration changes; All means too many rows
	// changed to list (a cluster snapshot): every cache must reload.
	Changes []Change
	All     bool
}

// OnConfigCommit registers f to be told, after each committed transaction
// that changed configuration, its new config version and its changes (the
// seam of config propagation between nodes sharing the database). f runs on
// the committing goroutine: it must be quick and must not write. Register
// before serving.
func (s *Store) OnConfigCommit(f func(ConfigCommit)) {
	s.configCommitted = append(s.configCommitted, f)
}

func (s *Store) notifyConfig(tx *Tx) {
	if !tx.config {
		return
	}
	c := ConfigCommit{Version: tx.configVersion, Changes: tx.configChanges, All: tx.configAll}
	for _, f := range s.configCommitted {
		f(c)
	}
}

// noteConfig marks the transaction as changing configuration when c does.
func (tx *Tx) noteConfig(c Change) {
	if !IsConfigChange(c) {
		return
	}
	tx.config = true
	if len(tx.s.configCommitted) > 0 {
		tx.configChanges = append(tx.configChanges, c)
	}
}

// bumpConfigVersion adds one to the config version inside the transaction.
// The row lock it takes orders committing configuration changes, so
// versions commit in the order they are handed out.
func (tx *Tx) bumpConfigVersion() error {
	var v int64
	if tx.s.dialect == MySQL {
		res := tx.db.Exec("UPDATE config_state SET version = LAST_INSERT_ID(version + 1) WHERE id = 1")
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if err := tx.db.Raw("SELECT LAST_INSERT_ID()").Scan(&v).Error; err != nil {
			return err
		}
	} else if err := tx.db.Raw("UPDATE config_state SET version = version + 1 WHERE id = 1 RETURNING version").Scan(&v).Error; err != nil {
		return err
	}
	tx.configVersion = v
	return nil
}

// ConfigState is the database's count of configuration changes and its
// instance name (migration0021).
type ConfigState struct {
	Version  int64
	Instance string
}

// ConfigState reads the config version and the instance name.
func (s *Store) ConfigState(ctx context.Context) (ConfigState, error) {
	var rows []ConfigState
	err := s.read(ctx).Raw("SELECT version, instance FROM config_state WHERE id = 1").Scan(&rows).Error
	if err != nil {
		return ConfigState{}, wrap("read config version", err)
	}
	if len(rows) == 0 {
		return ConfigState{}, wrap("read config version", ErrNotFound)
	}
	rows[0].Instance = strings.ToLower(rows[0].Instance)
	return rows[0], nil
}

// Ready checks, within ctx, that the database answers and that every
// migration this binary knows is recorded: the readiness probe.
func (s *Store) Ready(ctx context.Context) error {
	versions := make([]string, len(migrations))
	for i, m := range migrations {
		versions[i] = m.version
	}
	var n int64
	err := s.read(ctx).Model(&schemaMigration{}).Where("version IN ?", versions).Count(&n).Error
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if n != int64(len(versions)) {
		return ErrMigrationsPending
	}
	return nil
}

// ErrMigrationsPending means the database lacks migrations this binary
// needs (Ready).
var ErrMigrationsPending = errors.New("migrations pending")
