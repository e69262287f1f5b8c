package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A DSN in none of the accepted forms stops the process at start with the
// list of forms; before, a typical mistake (a host without tcp(…)) reached
// the MySQL driver and failed with "default addr for network 'localhost'
// unknown". The password is not repeated.
func TestUnrecognisedDSNListsTheAcceptedForms(t *testing.T) {
	apptest.Parallel(t)
	bin := buildGateway(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "SQL_DSN=modelgate:hunter2@localhost/modelgate", "PORT=0", "DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("exit %d (%v), want 1; output:\n%s", code, err, out)
	}
	msg := string(out)
	for _, want := range []string{
		"modelgate: configuration: SQL_DSN: not a recognised DSN; accepted forms: empty for SQLite;",
		"postgres://user:password@host:5432/db", "host=… port=5432 user=… password=… dbname=…",
		"user:password@tcp(host:3306)/db", "mysql://user:password@host:3306/db",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("output does not contain %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("the output repeats the password:\n%s", msg)
	}
}

// With MODELGATE_TEST_POSTGRES_DSN set, the gateway opens PostgreSQL from
// the keyword/value form of that URL, quoted values included, and its tables
// land in the schema the settings name.
func TestKeywordValueDSNOpensPostgres(t *testing.T) {
	apptest.Parallel(t)
	var pgURL string
	for _, e := range storetest.Engines() {
		if e.Name == "postgres" {
			pgURL = e.FreshDSN(t) // carries search_path=<a fresh schema>
		}
	}
	if pgURL == "" {
		t.Skipf("%s is not set", storetest.EnvPostgres)
	}
	const appName = `model'gate \ keyword test`
	kw := keywordValueDSN(t, pgURL) + " application_name=" + quoteLibpq(appName)
	env := apptest.New(t, "SQL_DSN", kw)
	if got := env.Engine(); got != "postgres" {
		t.Fatalf("engine %q, want postgres", got)
	}
	env.NewUser("kwuser", 1) // a write and a login through the keyword-form connection

	db, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, _ := url.Parse(pgURL)
	schema := u.Query().Get("search_path")
	var users, conns int
	if err := db.QueryRow(`SELECT count(*) FROM ` + schema + `.users WHERE username = 'kwuser'`).Scan(&users); err != nil || users != 1 {
		t.Fatalf("kwuser in schema %s: %d, %v", schema, users, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&conns); err != nil || conns == 0 {
		t.Fatalf("connections named %q: %d, %v", appName, conns, err)
	}
}

// With MODELGATE_TEST_MYSQL_DSN set, the gateway opens MySQL/MariaDB from
// a mysql:// URL of that database.
func TestMySQLURLOpensMySQL(t *testing.T) {
	apptest.Parallel(t)
	var driverDSN string
	for _, e := range storetest.Engines() {
		if e.Name == "mysql" {
			driverDSN = e.FreshDSN(t)
		}
	}
	if driverDSN == "" {
		t.Skipf("%s is not set", storetest.EnvMySQL)
	}
	cfg, err := mysql.ParseDSN(driverDSN)
	if err != nil || cfg.Net != "tcp" {
		t.Fatalf("%s: want a tcp(…) DSN (%v)", storetest.EnvMySQL, err)
	}
	u := url.URL{Scheme: "mysql", User: url.UserPassword(cfg.User, cfg.Passwd), Host: cfg.Addr, Path: "/" + cfg.DBName}
	if cfg.Passwd == "" {
		u.User = url.User(cfg.User)
	}
	env := apptest.New(t, "SQL_DSN", u.String())
	if got := env.Engine(); got != "mysql" {
		t.Fatalf("engine %q, want mysql", got)
	}
	env.NewUser("urluser", 1)
}

// keywordValueDSN rewrites a postgres:// URL as libpq keyword/value
// settings: host, port, user, password, dbname, then the query parameters.
func keywordValueDSN(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var kv []string
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, k+"="+quoteLibpq(v))
		}
	}
	add("host", u.Hostname())
	add("port", u.Port())
	add("user", u.User.Username())
	pw, _ := u.User.Password()
	add("password", pw)
	add("dbname", strings.TrimPrefix(u.Path, "/"))
	for k, vs := range u.Query() {
		add(k, vs[0])
	}
	return strings.Join(kv, " ")
}

// quoteLibpq single-quotes v, escaping quotes and backslashes.
func quoteLibpq(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// buildGateway builds this command once per test run and returns the
// binary; the tests that run it as a process share it (a build is seconds
// of CPU, most of this package's time when each test built its own). The
// first caller builds; a failed build fails every caller.
func buildGateway(t *testing.T) string {
	t.Helper()
	gateway.once.Do(func() {
		dir, err := os.MkdirTemp("", "modelgate-cmd-test-")
		if err != nil {
			gateway.err = err
			return
		}
		gateway.dir = dir
		gateway.bin = filepath.Join(dir, "modelgate")
		if out, err := exec.Command("go", "build", "-o", gateway.bin, ".").CombinedOutput(); err != nil {
			gateway.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if gateway.err != nil {
		t.Fatalf("build: %v", gateway.err)
	}
	return gateway.bin
}

// gateway is the binary buildGateway built; TestMain removes its dir.
var gateway struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gateway.dir != "" {
		os.RemoveAll(gateway.dir)
	}
	os.Exit(code)
}
