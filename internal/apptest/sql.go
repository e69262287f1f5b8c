package apptest

import "github.com/modelgate/modelgate/internal/store/storetest"

// Engine names the gateway's database engine: sqlite, postgres or mysql.
func (e *Env) Engine() string { return string(e.App.Store.Dialect()) }

// ExecSQL runs statements on the gateway's database over a connection of
// its own. Tests use it to break the database on purpose, e.g. with
// storetest.PoisonLogTrigger.
func (e *Env) ExecSQL(stmts ...string) {
	e.t.Helper()
	storetest.ExecSQL(e.t, e.Config.SQLDSN, e.DBPath(), stmts...)
}
