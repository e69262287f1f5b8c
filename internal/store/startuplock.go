package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// Startup lock: migrations, the money clamp and the seeds (the root user)
// run under one database-wide lock, so nodes started at the same moment on
// an empty database come up one after another instead of racing on DDL and
// on unique keys (docs/operations.md, Deploy). SQLite needs none: one
// process owns the file.
//
// The lock belongs to one connection held for the whole critical section
// (PostgreSQL session advisory lock, MySQL GET_LOCK), not to a
// transaction: MySQL commits DDL implicitly, and the section spans many
// transactions. If the process dies the connection closes and the server
// releases the lock.

// startupLockKey is PostgreSQL's advisory lock key, paired with a hash of
// the current schema (deployments in two schemas of one database do not
// wait on each other). It differs from the per-step key of migrate
// (7305581), which a migration transaction on another connection of this
// process takes while the startup lock is held.
const startupLockKey = 7305582

// startupLockName is MySQL's GET_LOCK name (per server, so the database
// name is part of it: two deployments on one server do not wait on each
// other).
const startupLockName = "modelgate.startup."

// startupLockWait is one GET_LOCK wait; the loop logs once that it waits
// and goes on until ctx ends.
const startupLockWait = 5 * time.Second

// withStartupLock runs fn while this process holds the startup lock.
func (s *Store) withStartupLock(ctx context.Context, fn func() error) error {
	if s.dialect == SQLite {
		return fn()
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("startup lock: %w", err)
	}
	defer conn.Close()
	unlock, err := s.takeStartupLock(ctx, conn)
	if err != nil {
		return fmt.Errorf("startup lock: %w", err)
	}
	fnErr := fn()
	// Released even when ctx ended: the lock must not outlive the section
	// on a pooled connection (Close returns it to the pool otherwise).
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := unlock(releaseCtx); err != nil {
		// A connection whose unlock failed is dropped, which releases it.
		conn.Raw(func(any) error { return driver.ErrBadConn })
		s.log.Warn("startup lock: release failed; dropping its connection", "err", err)
	}
	return fnErr
}

func (s *Store) takeStartupLock(ctx context.Context, conn *sql.Conn) (func(context.Context) error, error) {
	if s.dialect == Postgres {
		start := time.Now()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1, hashtext(coalesce(current_schema(), '')))", startupLockKey); err != nil {
			return nil, err
		}
		if waited := time.Since(start); waited > time.Second {
			s.log.Info("startup lock taken after another node's start", "waited", waited.Round(time.Millisecond))
		}
		return func(ctx context.Context) error {
			_, err := conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1, hashtext(coalesce(current_schema(), '')))", startupLockKey)
			return err
		}, nil
	}
	var database sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database); err != nil {
		return nil, err
	}
	// GET_LOCK names are at most 64 characters.
	name := startupLockName + database.String
	if len(name) > 64 {
		name = name[:64]
	}
	for logged := false; ; {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, int(startupLockWait/time.Second)).Scan(&got); err != nil {
			return nil, err
		}
		if got.Valid && got.Int64 == 1 {
			break
		}
		if !got.Valid {
			return nil, fmt.Errorf("GET_LOCK(%q) failed", name)
		}
		if !logged {
			s.log.Info("waiting for the startup lock: another node is migrating or seeding")
			logged = true
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		_, err := conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", name)
		return err
	}, nil
}
