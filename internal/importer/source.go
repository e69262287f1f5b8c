package importer

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/store/dsn"
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// source is the old gateway's database, opened for reading only.
type source struct {
	db *gorm.DB
}

// openSource opens SOURCE: a SQLite file path, a MySQL DSN
// (user:pass@tcp(host:port)/db) or a PostgreSQL DSN (postgres://…). A
// SQLite file is opened read-only (and must exist); server databases are
// only read with SELECT.
func openSource(src string) (*source, error) {
	var dialector gorm.Dialector
	if looksLikeFile(src) {
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		dialector = gormlite.Open("file:" + src + "?mode=ro&_pragma=busy_timeout(10000)")
	} else {
		engine, driverDSN, err := dsn.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		switch engine {
		case dsn.Postgres:
			dialector = postgres.Open(driverDSN)
		case dsn.MySQL:
			dialector = mysql.Open(driverDSN)
		default:
			return nil, fmt.Errorf("source: %q is neither a SQLite file, a MySQL DSN nor a PostgreSQL DSN", src)
		}
	}
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("open source: %w", err)
	}
	return &source{db: db}, nil
}

// looksLikeFile tells a SQLite path from a DSN: DSNs carry "://", "@" or
// "=" (keyword/value), file paths rarely do.
func looksLikeFile(s string) bool {
	return !strings.Contains(s, "://") && !strings.Contains(s, "@") && !strings.Contains(s, "=")
}

func (s *source) close() {
	if db, err := s.db.DB(); err == nil {
		db.Close()
	}
}

// row is one source row by lower-case column name. Reading SELECT * by name
// takes every version's schema: a column an older version lacks reads as
// absent, and the rules fall back to that version's meaning.
type row map[string]any

// table reads all rows of name; a missing optional table reads as none.
func (s *source) table(ctx context.Context, name string, optional bool) ([]row, error) {
	if !s.db.Migrator().HasTable(name) {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("source has no table %s: is it a one-api or new-api database?", name)
	}
	return s.query(ctx, "SELECT * FROM "+name)
}

// logsAfter reads up to n logs with ids above after, by id.
func (s *source) logsAfter(ctx context.Context, after int64, n int) ([]row, error) {
	return s.query(ctx, "SELECT * FROM logs WHERE id > ? ORDER BY id LIMIT ?", after, n)
}

func (s *source) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Table(table).Count(&n).Error
	return n, err
}

func (s *source) query(ctx context.Context, q string, args ...any) ([]row, error) {
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read source: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read source: %w", err)
		}
		r := make(row, len(cols))
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			r[strings.ToLower(c)] = vals[i]
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (r row) has(col string) bool { _, ok := r[col]; return ok }

// null reports a NULL or absent column.
func (r row) null(col string) bool { return r[col] == nil }

func (r row) str(col string) string {
	switch v := r[col].(type) {
	case nil:
		return ""
	case string:
		return v
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	default:
		return fmt.Sprint(v)
	}
}

// int reads an integer column; a value that is not one reads as 0, ok false.
func (r row) int(col string) (int64, bool) {
	switch v := r[col].(type) {
	case nil:
		return 0, true
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int:
		return int64(v), true
	case uint64:
		if v > 1<<63-1 {
			return 0, false
		}
		return int64(v), true
	case float64: // a REAL left by an overflow on SQLite
		if v != v || v >= 9.2e18 || v <= -9.2e18 {
			return 0, false
		}
		return int64(v), true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func (r row) i(col string) int64 { n, _ := r.int(col); return n }

func (r row) bool(col string) bool {
	switch v := r[col].(type) {
	case bool:
		return v
	case string:
		return v == "1" || strings.EqualFold(v, "true") || v == "t"
	}
	n, _ := r.int(col)
	return n != 0
}
