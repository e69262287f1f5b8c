package apptest

import (
	"database/sql"
	"strings"

	_ "github.com/go-sql-driver/mysql"       // the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib"       // the "pgx" database/sql driver
	_ "github.com/ncruces/go-sqlite3/driver" // the "sqlite3" database/sql driver
)

// Engine names the gateway's database engine: sqlite, postgres or mysql.
func (e *Env) Engine() string { return string(e.App.Store.Dialect()) }

// ExecSQL runs statements on the gateway's database over a connection of
// its own. Tests use it to break the database on purpose, e.g. with a
// trigger that makes one write fail.
func (e *Env) ExecSQL(stmts ...string) {
	e.t.Helper()
	driver, dsn := "sqlite3", "file:"+e.DBPath()+"?_pragma=busy_timeout(10000)"
	switch {
	case strings.HasPrefix(e.Config.SQLDSN, "postgres"):
		driver, dsn = "pgx", e.Config.SQLDSN
	case e.Config.SQLDSN != "":
		driver, dsn = "mysql", e.Config.SQLDSN
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		e.t.Fatalf("open %s: %v", driver, err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			e.t.Fatalf("%s: %v", stmt, err)
		}
	}
}
