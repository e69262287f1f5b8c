package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the pgx database/sql driver
	"github.com/modelgate/modelgate/internal/store/dsn"
)

// Database mode (-dsn, BENCH_DSN): the gateway runs on a fresh database
// of a PostgreSQL or MariaDB/MySQL server, and the server's CPU is read
// from /proc with the gateway's.

// envDSN is read when -dsn is not given.
const envDSN = "BENCH_DSN"

// databaseInfo is the database mode of a run in the report; the DSN itself
// is not written (it may carry a password).
type databaseInfo struct {
	Engine string `json:"engine"` // sqlite, postgres or mysql
	Name   string `json:"name,omitempty"`
	// ServerProcesses are the command names whose processes' CPU is the
	// database server's.
	ServerProcesses []string `json:"server_processes,omitempty"`
	DropError       string   `json:"drop_error,omitempty"`
}

// benchDatabase is the fresh database of one run on a server.
type benchDatabase struct {
	engine dsn.Engine
	driver string // database/sql driver name
	admin  string // the caller's DSN in its driver form: where CREATE and DROP run
	name   string
	// gatewayDSN is SQL_DSN of the gateway: admin pointed at name.
	gatewayDSN string
}

// newBenchDatabaseName is mgbench_ and 12 random lower-case letters and
// digits: a valid unquoted identifier on both engines.
func newBenchDatabaseName() string { return "mgbench_" + strings.ToLower(rand.Text()[:12]) }

// planDatabase recognises text as SQL_DSN does and says what the run's
// fresh database will be. SQLite (an empty DSN) is not a database mode.
func planDatabase(text, name string) (*benchDatabase, error) {
	engine, driverDSN, err := dsn.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("-dsn: %w", err)
	}
	d := &benchDatabase{engine: engine, admin: driverDSN, name: name}
	switch engine {
	case dsn.Postgres:
		d.driver = "pgx"
	case dsn.MySQL:
		d.driver = "mysql"
	default:
		return nil, errors.New("-dsn: empty; without it the bench runs on SQLite")
	}
	if d.gatewayDSN, err = freshDSN(engine, driverDSN, name); err != nil {
		return nil, err
	}
	return d, nil
}

// freshDSN is driverDSN (the driver form dsn.Parse returned) with its
// database replaced by name; every other setting (user, host, TLS,
// parameters) is kept.
func freshDSN(engine dsn.Engine, driverDSN, name string) (string, error) {
	switch engine {
	case dsn.Postgres:
		if strings.HasPrefix(driverDSN, "postgres://") || strings.HasPrefix(driverDSN, "postgresql://") {
			u, err := url.Parse(driverDSN)
			if err != nil {
				return "", errors.New("-dsn: not a valid PostgreSQL URL")
			}
			u.Path, u.RawPath = "/"+name, ""
			return u.String(), nil
		}
		// Keyword/value settings: of a repeated keyword the last one
		// counts (libpq, pgx), so the database is appended.
		return strings.TrimSpace(driverDSN) + " dbname=" + name, nil
	case dsn.MySQL:
		cfg, err := mysql.ParseDSN(driverDSN)
		if err != nil {
			return "", errors.New("-dsn: the MySQL driver cannot read it")
		}
		cfg.DBName = name
		return cfg.FormatDSN(), nil
	}
	return "", fmt.Errorf("-dsn: engine %s has no server database", engine)
}

// create makes the database on the server.
func (d *benchDatabase) create(ctx context.Context) error {
	stmt := "CREATE DATABASE " + d.name
	if d.engine == dsn.MySQL {
		stmt += " CHARACTER SET utf8mb4"
	}
	return d.exec(ctx, stmt)
}

// drop removes the database, also when the run failed or was interrupted
// (so it takes a context of its own). On PostgreSQL WITH (FORCE) ends
// connections a killed gateway may have left (PostgreSQL 13 and later;
// older servers get the plain statement).
func (d *benchDatabase) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d.engine == dsn.Postgres {
		err := d.exec(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)")
		if err == nil {
			return nil
		}
	}
	return d.exec(ctx, "DROP DATABASE IF EXISTS "+d.name)
}

// exec runs one statement over a connection of its own to the caller's
// database, closed at once: it must not stay among the server's backends
// whose CPU is measured.
func (d *benchDatabase) exec(ctx context.Context, stmt string) error {
	db, err := sql.Open(d.driver, d.admin)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// serverComms are the command names (/proc/<pid>/comm) of the engine's
// server processes: PostgreSQL forks one process per connection plus its
// background workers, all named postgres; MariaDB is one process of
// threads, mariadbd (mysqld before 10.5, and MySQL).
func serverComms(engine dsn.Engine) []string {
	switch engine {
	case dsn.Postgres:
		return []string{"postgres"}
	case dsn.MySQL:
		return []string{"mariadbd", "mysqld"}
	}
	return nil
}

// isServerComm reports whether a /proc/<pid>/comm (with or without its
// trailing newline) names one of comms.
func isServerComm(comm string, comms []string) bool {
	comm = strings.TrimSuffix(comm, "\n")
	for _, c := range comms {
		if comm == c {
			return true
		}
	}
	return false
}

// serverCPUTicks sums utime+stime+cutime+cstime of every process whose
// comm is one of comms, in clock ticks. The processes are listed again on
// each call: a backend that started since counts with its whole life. One
// that exited is not lost: its parent, the postmaster, has reaped it, and
// its ticks are now in the postmaster's cutime and cstime (until it is
// reaped it is a zombie whose own figures still show), so the sum never
// goes back when the gateway's pool closes a connection. /proc/<pid>/stat
// of a process covers all its threads, ended ones included, so a threaded
// server (MariaDB) is one entry.
func serverCPUTicks(comms []string) (ticks int64, procs int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || !isServerComm(string(comm), comms) {
			continue // gone meanwhile, or not the server
		}
		t, err := procCPUTicksWithChildren(pid)
		if err != nil {
			continue // exited between the two reads
		}
		ticks += t
		procs++
	}
	if procs == 0 {
		return 0, 0, fmt.Errorf("no process named %s in /proc: the database server must run on this machine", strings.Join(comms, " or "))
	}
	return ticks, procs, nil
}
