package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.DataDir != "./data" || c.SQLitePath != "data/modelgate.db" || c.SQLDSN != "" {
		t.Fatalf("defaults = %+v", c)
	}
	if !c.SessionSecretGenerated || len(c.SessionSecret) < 32 {
		t.Fatal("no random session secret when SESSION_SECRET is unset")
	}
	if c.ShutdownTimeout != 30*time.Second {
		t.Fatalf("shutdown timeout %v, want 30s", c.ShutdownTimeout)
	}
	if c.MetricsToken != "" || c.MetricsListen != "" || c.LogFormat != "text" {
		t.Fatalf("metrics and log defaults = %q %q %q", c.MetricsToken, c.MetricsListen, c.LogFormat)
	}
	if c.ShutdownDelay != 0 || c.ConfigPollInterval != 10*time.Second {
		t.Fatalf("shutdown delay %v, config poll %v; want 0s and 10s", c.ShutdownDelay, c.ConfigPollInterval)
	}
	c, err = Load(nil, env(map[string]string{"SHUTDOWN_DELAY": "0", "CONFIG_POLL_INTERVAL": "1s"}))
	if err != nil || c.ShutdownDelay != 0 || c.ConfigPollInterval != time.Second {
		t.Fatalf("SHUTDOWN_DELAY=0, CONFIG_POLL_INTERVAL=1s: %v %v %v", c.ShutdownDelay, c.ConfigPollInterval, err)
	}
	if c.Cluster.Enabled || c.Cluster.PingInterval != 10*time.Second || c.Cluster.BatchSize != 50 || c.Cluster.MaxPingFailures != 3 {
		t.Fatalf("cluster defaults = %+v", c.Cluster)
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	c, err := Load([]string{"--port", "4100"}, env(map[string]string{"PORT": "4000", "DATA_DIR": "/srv/mg"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 4100 || c.SQLitePath != "/srv/mg/modelgate.db" {
		t.Fatalf("port %d, sqlite %s", c.Port, c.SQLitePath)
	}
	c, err = Load(nil, env(map[string]string{"SHUTDOWN_TIMEOUT": "5s"}))
	if err != nil || c.ShutdownTimeout != 5*time.Second {
		t.Fatalf("SHUTDOWN_TIMEOUT=5s: %v %v", c.ShutdownTimeout, err)
	}
	c, err = Load([]string{"-shutdown-timeout", "2m"}, env(map[string]string{"SHUTDOWN_TIMEOUT": "5s"}))
	if err != nil || c.ShutdownTimeout != 2*time.Minute {
		t.Fatalf("-shutdown-timeout 2m: %v %v", c.ShutdownTimeout, err)
	}
}

func TestClusterMode(t *testing.T) {
	c, err := Load(nil, env(map[string]string{
		"CLUSTER_NODE_ID": "7", "CLUSTER_NODE_ADDRESS": "https://n7.example.com", "CLUSTER_SECRET": "s3cret",
		"CLUSTER_PING_INTERVAL": "3s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cluster.Enabled || c.Cluster.NodeName != "node-7" || c.Cluster.PingInterval != 3*time.Second ||
		c.Cluster.MaxClockSkew != 5*time.Minute {
		t.Fatalf("cluster = %+v", c.Cluster)
	}
}

// Every problem is reported at once, each naming its variable.
func TestInvalidValuesAreAllReported(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"PORT": "abc"}, []string{"PORT"}},
		{map[string]string{"PORT": "70000", "LOG_LEVEL": "loud"}, []string{"PORT", "LOG_LEVEL"}},
		{map[string]string{"SESSION_SECRET": "short"}, []string{"SESSION_SECRET"}},
		{map[string]string{"SHUTDOWN_TIMEOUT": "30"}, []string{"SHUTDOWN_TIMEOUT"}},
		{map[string]string{"SHUTDOWN_TIMEOUT": "0s"}, []string{"SHUTDOWN_TIMEOUT"}},
		{map[string]string{"SHUTDOWN_TIMEOUT": "2h"}, []string{"SHUTDOWN_TIMEOUT"}},
		{map[string]string{"SHUTDOWN_DELAY": "-1s", "CONFIG_POLL_INTERVAL": "500ms"}, []string{"SHUTDOWN_DELAY", "CONFIG_POLL_INTERVAL"}},
		{map[string]string{"SHUTDOWN_DELAY": "2h", "CONFIG_POLL_INTERVAL": "25h"}, []string{"SHUTDOWN_DELAY", "CONFIG_POLL_INTERVAL"}},
		{map[string]string{"SHUTDOWN_DELAY": "soon"}, []string{"SHUTDOWN_DELAY"}},
		{map[string]string{"INITIAL_ROOT_PASSWORD": "1234"}, []string{"INITIAL_ROOT_PASSWORD"}},
		{map[string]string{"REDIS_CONN_STRING": "localhost:6379"}, []string{"REDIS_CONN_STRING"}},
		{map[string]string{"SQL_DSN": "localhost:3306", "PORT": "x"}, []string{"SQL_DSN: not a recognised DSN; accepted forms", "PORT"}},
		{map[string]string{"SQL_DSN": "host=db password='unterminated"}, []string{"SQL_DSN: PostgreSQL keyword/value form"}},
		{map[string]string{"CLUSTER_NODE_ID": "50"}, []string{"CLUSTER_NODE_ID", "CLUSTER_NODE_ADDRESS", "CLUSTER_SECRET"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "n3:3000", "CLUSTER_SECRET": "x"}, []string{"CLUSTER_NODE_ADDRESS"}},
		{map[string]string{"CLUSTER_PUSH_INTERVAL": "soon", "CLUSTER_BATCH_SIZE": "0"}, []string{"CLUSTER_PUSH_INTERVAL", "CLUSTER_BATCH_SIZE"}},
		{map[string]string{"CLUSTER_MAX_CLOCK_SKEW": "5"}, []string{"CLUSTER_MAX_CLOCK_SKEW"}},
		{map[string]string{"CLUSTER_MAX_CLOCK_SKEW": "500ms"}, []string{"CLUSTER_MAX_CLOCK_SKEW: must be between 1s and 24h"}},
		{map[string]string{"CLUSTER_MAX_CLOCK_SKEW": "25h"}, []string{"CLUSTER_MAX_CLOCK_SKEW: must be between 1s and 24h"}},
		{map[string]string{"SQL_MAX_OPEN_CONNS": "1"}, []string{"SQL_MAX_OPEN_CONNS"}},
		{map[string]string{"SQL_MAX_OPEN_CONNS": "many"}, []string{"SQL_MAX_OPEN_CONNS"}},
		{map[string]string{"CLUSTER_NODE_ID": "1", "CLUSTER_NODE_ADDRESS": "http://a", "CLUSTER_SECRET": "s", "CLUSTER_SYNC_LOGS": "sometimes"}, []string{"CLUSTER_SYNC_LOGS"}},
		{map[string]string{"CLUSTER_NODE_ID": "seven", "CLUSTER_NODE_ADDRESS": "http://n7", "CLUSTER_SECRET": "x"}, []string{"CLUSTER_NODE_ID: \"seven\" is not an integer"}},
		{map[string]string{"CLUSTER_NODE_ID": "0", "CLUSTER_NODE_ADDRESS": "http://n7", "CLUSTER_SECRET": "x"}, []string{"CLUSTER_NODE_ID: must be 1 to 49"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "https://u:p@n3", "CLUSTER_SECRET": "x"}, []string{"CLUSTER_NODE_ADDRESS"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "https://n3/?a=b", "CLUSTER_SECRET": "x"}, []string{"CLUSTER_NODE_ADDRESS"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "http://n3", "CLUSTER_SECRET": "a\x00b", "CLUSTER_NODE_NAME": "n\x01"}, []string{"CLUSTER_SECRET", "CLUSTER_NODE_NAME"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "http://n3", "CLUSTER_SECRET": "x", "CLUSTER_PREVIOUS_SECRET": "x"}, []string{"CLUSTER_PREVIOUS_SECRET: must differ"}},
		{map[string]string{"CLUSTER_NODE_ID": "3", "CLUSTER_NODE_ADDRESS": "http://n3", "CLUSTER_SECRET": "x", "CLUSTER_PREVIOUS_SECRET": "a\nb"}, []string{"CLUSTER_PREVIOUS_SECRET"}},
		{map[string]string{"CLUSTER_MAX_PING_FAILURES": "0", "CLUSTER_PING_INTERVAL": "-1s"}, []string{"CLUSTER_MAX_PING_FAILURES", "CLUSTER_PING_INTERVAL"}},
		{map[string]string{"METRICS_TOKEN": "short", "LOG_FORMAT": "xml"}, []string{"METRICS_TOKEN", "LOG_FORMAT"}},
		{map[string]string{"METRICS_LISTEN": "127.0.0.1:9090"}, []string{"METRICS_LISTEN: set METRICS_TOKEN too"}},
	}
	for _, tt := range tests {
		_, err := Load(nil, env(tt.env))
		if err == nil {
			t.Errorf("%v: accepted", tt.env)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tt.env, err, w)
			}
		}
	}
}

// Each accepted SQL_DSN form passes validation untouched (the store
// recognises it again when it opens).
func TestSQLDSNForms(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable",
		"root@tcp(127.0.0.1:3306)/test",
		"mysql://root:pw@127.0.0.1:3306/test",
	} {
		c, err := Load(nil, env(map[string]string{"SQL_DSN": dsn}))
		if err != nil || c.SQLDSN != dsn {
			t.Errorf("SQL_DSN=%q: %q, %v", dsn, c.SQLDSN, err)
		}
	}
}

// LISTEN_ADDR (or --listen) wins over PORT; without it PORT keeps its
// meaning on every interface. Bad addresses are refused by name.
func TestListenAddr(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		vars    map[string]string
		addr    string
		port    int
		problem string
	}{
		{nil, nil, ":3000", 3000, ""},
		{nil, map[string]string{"PORT": "4000"}, ":4000", 4000, ""},
		{nil, map[string]string{"PORT": "4000", "LISTEN_ADDR": "127.0.0.1:3001"}, "127.0.0.1:3001", 3001, ""},
		{[]string{"--listen", "[::1]:3002"}, map[string]string{"LISTEN_ADDR": "127.0.0.1:3001"}, "[::1]:3002", 3002, ""},
		{[]string{"--port", "4100"}, map[string]string{"LISTEN_ADDR": "127.0.0.1:3001"}, "127.0.0.1:3001", 3001, ""},
		{nil, map[string]string{"LISTEN_ADDR": ":0"}, ":0", 0, ""},
		{nil, map[string]string{"LISTEN_ADDR": "localhost:8080"}, "localhost:8080", 8080, ""},
		{nil, map[string]string{"LISTEN_ADDR": "3000"}, "", 0, "LISTEN_ADDR: \"3000\" is not host:port"},
		{nil, map[string]string{"LISTEN_ADDR": "127.0.0.1:http"}, "", 0, "has no port number"},
		{nil, map[string]string{"LISTEN_ADDR": "127.0.0.1:65536"}, "", 0, "has no port number"},
		{nil, map[string]string{"LISTEN_ADDR": "127.0.0.1:+80"}, "", 0, "has no port number"},
		{nil, map[string]string{"LISTEN_ADDR": "a b:80"}, "", 0, "has an invalid host"},
		{nil, map[string]string{"LISTEN_ADDR": "a\x00:80"}, "", 0, "has an invalid host"},
	} {
		c, err := Load(tt.args, env(tt.vars))
		if tt.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("%v %v: error %v, want %q", tt.args, tt.vars, err, tt.problem)
			}
			continue
		}
		if err != nil || c.Addr() != tt.addr || c.ListenPort() != tt.port {
			t.Errorf("%v %v: addr %q port %d (%v), want %q %d", tt.args, tt.vars, c.Addr(), c.ListenPort(), err, tt.addr, tt.port)
		}
	}
	// A Config built by hand (tests) listens on :Port.
	if got := (Config{Port: 4200}).Addr(); got != ":4200" {
		t.Errorf("Config{Port: 4200}.Addr() = %q", got)
	}
}
