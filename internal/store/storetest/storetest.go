// Package storetest provisions a fresh, empty database for each test on the
// engine the environment selects, so the same tests run on SQLite,
// PostgreSQL and MySQL/MariaDB.
//
// MODELGATE_TEST_POSTGRES_DSN and MODELGATE_TEST_MYSQL_DSN name servers that
// tests may create schemas or databases on. MODELGATE_TEST_DB (sqlite,
// postgres or mysql; default sqlite) picks the engine of suites that run on
// one engine at a time, such as the HTTP tests.
package storetest

import (
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the pgx database/sql driver
	"github.com/modelgate/modelgate/internal/store/dsn"
	_ "github.com/ncruces/go-sqlite3/driver" // registers the sqlite3 database/sql driver
)

// Environment variables read by this package.
const (
	EnvPostgres = "MODELGATE_TEST_POSTGRES_DSN"
	EnvMySQL    = "MODELGATE_TEST_MYSQL_DSN"
	EnvEngine   = "MODELGATE_TEST_DB"
)

// Engine is one database to test on. DSN is empty for SQLite (the test
// uses a file in its temp dir).
type Engine struct {
	Name string
	dsn  string
}

// Engines returns SQLite plus every server engine whose DSN is set.
func Engines() []Engine {
	engines := []Engine{{Name: "sqlite"}}
	if dsn := os.Getenv(EnvPostgres); dsn != "" {
		engines = append(engines, Engine{Name: "postgres", dsn: dsn})
	}
	if dsn := os.Getenv(EnvMySQL); dsn != "" {
		engines = append(engines, Engine{Name: "mysql", dsn: dsn})
	}
	return engines
}

// EachEngine runs f on a fresh database of SQLite and of every server
// engine configured, as a subtest named for the engine: dsn is empty for
// SQLite, whose file is sqlitePath.
func EachEngine(t *testing.T, f func(t *testing.T, dsn, sqlitePath string)) {
	for _, eng := range Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			f(t, eng.FreshDSN(t), filepath.Join(t.TempDir(), "test.db"))
		})
	}
}

// Selected is the engine named by MODELGATE_TEST_DB. A selected server
// engine without its DSN fails the test: CI asked for it.
func Selected(t testing.TB) Engine {
	t.Helper()
	name := strings.ToLower(os.Getenv(EnvEngine))
	switch name {
	case "", "sqlite":
		return Engine{Name: "sqlite"}
	case "postgres":
		return Engine{Name: name, dsn: require(t, EnvPostgres)}
	case "mysql":
		return Engine{Name: name, dsn: require(t, EnvMySQL)}
	}
	t.Fatalf("%s=%q: want sqlite, postgres or mysql", EnvEngine, name)
	return Engine{}
}

func require(t testing.TB, env string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		t.Fatalf("%s selects this engine but %s is not set", EnvEngine, env)
	}
	return dsn
}

// FreshDSN creates an empty schema (PostgreSQL) or database (MySQL) for the
// test, dropped when it ends, and returns a DSN for it. For SQLite it returns
// "" and the caller opens a file under t.TempDir().
func (e Engine) FreshDSN(t testing.TB) string {
	t.Helper()
	name := "mgtest_" + strings.ToLower(rand.Text()[:12])
	switch e.Name {
	case "postgres":
		db := open(t, "pgx", e.dsn)
		exec(t, db, "CREATE SCHEMA "+name)
		t.Cleanup(func() { db.Exec("DROP SCHEMA " + name + " CASCADE"); db.Close() })
		u, err := url.Parse(e.dsn)
		if err != nil {
			t.Fatalf("parse %s: %v", EnvPostgres, err)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return u.String()
	case "mysql":
		db := open(t, "mysql", e.dsn)
		exec(t, db, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4")
		t.Cleanup(func() { db.Exec("DROP DATABASE " + name); db.Close() })
		cfg, err := mysql.ParseDSN(e.dsn)
		if err != nil {
			t.Fatalf("parse %s: %v", EnvMySQL, err)
		}
		cfg.DBName = name
		return cfg.FormatDSN()
	}
	return ""
}

func open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	return db
}

func exec(t testing.TB, db *sql.DB, stmt string) {
	t.Helper()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", stmt, err))
	}
}

// ExecSQL runs statements on a test database over a connection of its
// own: dsnText as FreshDSN returned it (any form SQL_DSN accepts), sqlitePath the file when dsn is "".
// Tests use it to break the database on purpose (PoisonLogTrigger).
func ExecSQL(t testing.TB, dsnText, sqlitePath string, stmts ...string) {
	t.Helper()
	engine, driverDSN, err := dsn.Parse(dsnText)
	if err != nil {
		t.Fatal(err)
	}
	driver := "sqlite3"
	switch engine {
	case dsn.Postgres:
		driver = "pgx"
	case dsn.MySQL:
		driver = "mysql"
	default:
		driverDSN = "file:" + sqlitePath + "?_pragma=busy_timeout(10000)"
	}
	db := open(t, driver, driverDSN)
	defer db.Close()
	for _, stmt := range stmts {
		exec(t, db, stmt)
	}
}

// PoisonLogTrigger makes the database refuse to insert a log whose
// request id is "poison" (the error text contains "poisoned settlement"):
// a settlement that cannot be written, through real SQL on each engine.
// engine is sqlite, postgres or mysql; drop removes the trigger again.
func PoisonLogTrigger(engine string) (create []string, drop string) {
	switch engine {
	case "postgres":
		return []string{
			`CREATE FUNCTION poison_log() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.request_id = 'poison' THEN RAISE EXCEPTION 'poisoned settlement'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER poison_log BEFORE INSERT ON logs FOR EACH ROW EXECUTE FUNCTION poison_log()`,
		}, `DROP TRIGGER poison_log ON logs`
	case "mysql":
		return []string{`CREATE TRIGGER poison_log BEFORE INSERT ON logs FOR EACH ROW BEGIN
			IF NEW.request_id = 'poison' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned settlement'; END IF; END`,
		}, `DROP TRIGGER poison_log`
	}
	return []string{`CREATE TRIGGER poison_log BEFORE INSERT ON logs WHEN NEW.request_id = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned settlement'); END`}, `DROP TRIGGER poison_log`
}
