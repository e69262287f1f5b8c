package main

import (
	"os"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/store/dsn"
)

func TestPlanDatabasePointsTheDSNAtTheFreshDatabase(t *testing.T) {
	const name = "mgbench_abc123"
	tests := []struct {
		text       string
		engine     dsn.Engine
		admin      string // where CREATE/DROP run: the caller's database
		wantFresh  string
		wantDriver string
	}{
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", dsn.Postgres,
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/mgbench_abc123?sslmode=disable", "pgx"},
		{"postgresql://u:p%40ss@db.example:6543/app", dsn.Postgres, "postgresql://u:p%40ss@db.example:6543/app",
			"postgresql://u:p%40ss@db.example:6543/mgbench_abc123", "pgx"},
		{"postgres://postgres@127.0.0.1:5432", dsn.Postgres, "postgres://postgres@127.0.0.1:5432",
			"postgres://postgres@127.0.0.1:5432/mgbench_abc123", "pgx"},
		{"host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable", dsn.Postgres,
			"host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable",
			"host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable dbname=mgbench_abc123", "pgx"},
		{"root@tcp(127.0.0.1:3306)/test", dsn.MySQL, "root@tcp(127.0.0.1:3306)/test",
			"root@tcp(127.0.0.1:3306)/mgbench_abc123", "mysql"},
		{"bench:secret@tcp(db:3306)/app?parseTime=true", dsn.MySQL, "bench:secret@tcp(db:3306)/app?parseTime=true",
			"bench:secret@tcp(db:3306)/mgbench_abc123?parseTime=true", "mysql"},
		{"mysql://root@127.0.0.1:3306/test", dsn.MySQL, "root@tcp(127.0.0.1:3306)/test",
			"root@tcp(127.0.0.1:3306)/mgbench_abc123", "mysql"},
	}
	for _, tt := range tests {
		d, err := planDatabase(tt.text, name)
		if err != nil {
			t.Errorf("%s: %v", tt.text, err)
			continue
		}
		if d.engine != tt.engine || d.admin != tt.admin || d.gatewayDSN != tt.wantFresh || d.driver != tt.wantDriver || d.name != name {
			t.Errorf("%s:\n got %s %s admin %q fresh %q\nwant %s %s admin %q fresh %q",
				tt.text, d.engine, d.driver, d.admin, d.gatewayDSN, tt.engine, tt.wantDriver, tt.admin, tt.wantFresh)
		}
		// The gateway reads the rewritten DSN as the same engine.
		if e, _, err := dsn.Parse(d.gatewayDSN); err != nil || e != tt.engine {
			t.Errorf("%s: fresh DSN %q parses as %s, %v", tt.text, d.gatewayDSN, e, err)
		}
	}
}

func TestPlanDatabaseRejects(t *testing.T) {
	for _, text := range []string{"", "   ", "not a dsn", "user@localhost/db"} {
		if _, err := planDatabase(text, "mgbench_x"); err == nil {
			t.Errorf("planDatabase(%q): want an error", text)
		}
	}
}

func TestBenchDatabaseNameIsAnIdentifier(t *testing.T) {
	a, b := newBenchDatabaseName(), newBenchDatabaseName()
	if a == b {
		t.Errorf("two runs got the same database %s", a)
	}
	rest, ok := strings.CutPrefix(a, "mgbench_")
	if !ok || len(rest) != 12 || strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		t.Errorf("name %q: want mgbench_ and 12 lower-case base32 characters", a)
	}
}

func TestServerComms(t *testing.T) {
	pg, my := serverComms(dsn.Postgres), serverComms(dsn.MySQL)
	tests := []struct {
		comm  string
		comms []string
		want  bool
	}{
		{"postgres\n", pg, true}, // as read from /proc/<pid>/comm
		{"postgres", pg, true},
		{"postgres_exporter\n", pg, false},
		{"psql\n", pg, false},
		{"mariadbd\n", my, true},
		{"mysqld\n", my, true},
		{"mysql\n", my, false}, // the client
		{"mariadbd\n", pg, false},
		{"postgres\n", my, false},
		{"", pg, false},
	}
	for _, tt := range tests {
		if got := isServerComm(tt.comm, tt.comms); got != tt.want {
			t.Errorf("isServerComm(%q, %v) = %v, want %v", tt.comm, tt.comms, got, tt.want)
		}
	}
	if serverComms(dsn.SQLite) != nil {
		t.Error("SQLite has server processes")
	}
}

// TestServerCPUTicksReadsProc sums this test binary's own processes by its
// command name, so the scan agrees with the kernel's format.
func TestServerCPUTicksReadsProc(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc")
	}
	if _, n, err := serverCPUTicks([]string{strings.TrimSpace(string(comm))}); err != nil || n < 1 {
		t.Errorf("serverCPUTicks(self) found %d processes, %v", n, err)
	}
	if _, _, err := serverCPUTicks([]string{"no-such-process-name"}); err == nil {
		t.Error("serverCPUTicks without a match: want an error")
	}
}

func TestMetricValue(t *testing.T) {
	body := `# HELP modelgate_db_round_trips_total Statements sent to the database.
# TYPE modelgate_db_round_trips_total counter
modelgate_db_round_trips_total_extra 7
modelgate_db_round_trips_total 1.234567e+06
modelgate_relay_inflight 0
`
	if v, err := metricValue([]byte(body), roundTripsMetric); err != nil || v != 1234567 {
		t.Errorf("metricValue = %v, %v; want 1234567", v, err)
	}
	if v, err := metricValue([]byte("modelgate_db_round_trips_total 42 1700000000000\n"), roundTripsMetric); err != nil || v != 42 {
		t.Errorf("with a timestamp: %v, %v; want 42", v, err)
	}
	for _, bad := range []string{
		"# HELP modelgate_db_round_trips_total x\n",
		"modelgate_db_round_trips_total_other 3\n",
		"modelgate_db_round_trips_total abc\n",
		"",
	} {
		if v, err := metricValue([]byte(bad), roundTripsMetric); err == nil {
			t.Errorf("metricValue(%q) = %v, want an error", bad, v)
		}
	}
}
