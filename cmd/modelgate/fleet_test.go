package main

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/modelgate/modelgate/internal/user"
)

// fleetSize is how many nodes start at the same moment.
const fleetSize = 5

// Five gateway processes started at the same moment on an empty database
// all come up and turn ready: the migrations and the root user are made
// under the startup lock, so every migration is applied and recorded once,
// by one node, and there is one root (issue 27, §2). On PostgreSQL and on
// MariaDB/MySQL, each in a database created for the run and dropped after;
// skipped only when the engine's DSN is unset.
func TestFleetStartsTogetherOnAnEmptyDatabase(t *testing.T) {
	apptest.Parallel(t)
	engines := map[string]string{"postgres": storetest.EnvPostgres, "mysql": storetest.EnvMySQL}
	var bin string
	if os.Getenv(storetest.EnvPostgres) != "" || os.Getenv(storetest.EnvMySQL) != "" {
		bin = buildGateway(t)
	}
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			admin := os.Getenv(engines[name])
			if admin == "" {
				t.Skipf("%s is not set", engines[name])
			}
			driver, dsn := freshDatabase(t, name, admin)
			startFleet(t, bin, driver, dsn)
		})
	}
}

// freshDatabase creates a database with a random name on the server of
// admin (a DSN with rights to create one), drops it when the test ends,
// and returns the database/sql driver and the gateway's SQL_DSN for it.
func freshDatabase(t *testing.T, engine, admin string) (driver, dsn string) {
	t.Helper()
	name := "mgfleet_" + strings.ToLower(rand.Text()[:12])
	driver = "pgx"
	if engine == "mysql" {
		driver = "mysql"
	}
	db, err := sql.Open(driver, admin)
	if err != nil {
		t.Fatal(err)
	}
	create, drop := "CREATE DATABASE "+name, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"
	if engine == "mysql" {
		create, drop = create+" CHARACTER SET utf8mb4", "DROP DATABASE IF EXISTS "+name
	}
	if _, err := db.Exec(create); err != nil {
		db.Close()
		t.Fatalf("%s: %v", create, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec(drop); err != nil {
			t.Errorf("%s: %v", drop, err)
		}
		db.Close()
	})
	if engine == "mysql" {
		cfg, err := mysql.ParseDSN(admin)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = name
		return driver, cfg.FormatDSN()
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return driver, u.String()
}

// fleetNode is one gateway process of the fleet and everything it logged.
type fleetNode struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited, with err
	err  error
	url  string
}

var appliedMigration = regexp.MustCompile(`msg="applied migration" version=(\S+)`)

func startFleet(t *testing.T, bin, driver, dsn string) {
	nodes := make([]*fleetNode, fleetSize)
	for i := range nodes {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "SQL_DSN="+dsn, "LISTEN_ADDR=127.0.0.1:0", "DATA_DIR="+t.TempDir(), "LOG_LEVEL=info",
			"INITIAL_ROOT_PASSWORD="+apptest.RootPassword, "SESSION_SECRET="+apptest.SessionSecret, "SQL_MAX_OPEN_CONNS=8")
		n := &fleetNode{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
		cmd.Stderr = n.log
		nodes[i] = n
	}
	// Started back to back, before any has had time to connect.
	for i, n := range nodes {
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		go func() { n.err = n.cmd.Wait(); close(n.done) }()
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, n := range nodes {
			select {
			case <-n.done:
			case <-time.After(60 * time.Second):
				n.cmd.Process.Kill()
				<-n.done
			}
		}
	})

	// Every node listens and turns ready; none exits. The bound is for a
	// loaded 2-core machine: the nodes migrate one after another.
	deadline := time.Now().Add(3 * time.Minute)
	for i, n := range nodes {
		for n.url == "" {
			if m := listeningAddr.FindStringSubmatch(n.log.String()); m != nil {
				n.url = "http://127.0.0.1:" + m[1]
				break
			}
			select {
			case <-n.done:
				t.Fatalf("node %d exited (%v) before listening:\n%s", i, n.err, n.log.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d is not listening:\n%s", i, n.log.String())
			}
		}
		for !ready(n.url) {
			select {
			case <-n.done:
				t.Fatalf("node %d exited (%v) before ready:\n%s", i, n.err, n.log.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d is not ready:\n%s", i, n.log.String())
			}
		}
	}

	// Each migration was applied once, and all by one node: the first to
	// take the startup lock migrated the empty database whole.
	applied := map[string]int{}
	rootsCreated, migrators := 0, 0
	for _, n := range nodes {
		out := n.log.String()
		ms := appliedMigration.FindAllStringSubmatch(out, -1)
		for _, m := range ms {
			applied[m[1]]++
		}
		if len(ms) > 0 {
			migrators++
		}
		rootsCreated += strings.Count(out, "created the root user")
	}
	if len(applied) == 0 {
		t.Fatal("no node logged an applied migration")
	}
	if migrators != 1 {
		t.Errorf("%d nodes applied migrations, want one that applied them all", migrators)
	}
	for v, c := range applied {
		if c != 1 {
			t.Errorf("migration %s applied by %d nodes, want 1", v, c)
		}
	}
	if rootsCreated != 1 {
		t.Errorf("%d nodes created the root user, want 1", rootsCreated)
	}

	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	countRoots := "SELECT COUNT(*) FROM users WHERE role = ?"
	if driver == "pgx" {
		countRoots = "SELECT COUNT(*) FROM users WHERE role = $1"
	}
	var roots int
	if err := db.QueryRow(countRoots, user.RoleRoot).Scan(&roots); err != nil {
		t.Fatal(err)
	}
	if roots != 1 {
		t.Errorf("%d root users, want 1", roots)
	}
	rows, err := db.Query("SELECT version FROM schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	recorded := map[string]int{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		recorded[v]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != len(applied) {
		t.Errorf("%d migrations recorded, %d applied by the nodes", len(recorded), len(applied))
	}
	for v, c := range recorded {
		if c != 1 || applied[v] != 1 {
			t.Errorf("migration %s recorded %d times, applied %d times; want once each", v, c, applied[v])
		}
	}

	// Every node serves: root logs in on each with the password it was
	// created with.
	for i, n := range nodes {
		resp, err := http.Post(n.url+"/api/user/login", "application/json",
			bytes.NewBufferString(`{"username":"root","password":"`+apptest.RootPassword+`"}`))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(body.String(), `"success":true`) {
			t.Errorf("node %d: root login answered %d %s", i, resp.StatusCode, body.String())
		}
	}
}

func ready(url string) bool {
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
