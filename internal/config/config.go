// Package config owns the run contract (docs/operations.md, Configuration):
// one Config struct, loaded once from flags and environment variables (flags
// win) and validated all at once.
package config

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/store/dsn"
)

// Config is everything the process reads at start. Runtime settings that an
// admin can change live in the database (package option), not here.
type Config struct {
	Port int
	// ListenAddr is the host:port the server binds (LISTEN_ADDR or
	// --listen); when neither is set it is ":<Port>", every interface, as
	// before the variable existed. Empty (a Config built by hand) also
	// means ":<Port>".
	ListenAddr string
	DataDir    string
	SQLDSN     string // empty: SQLite at SQLitePath
	SQLitePath string
	// SQLMaxOpenConns bounds this process's connections to a server
	// database (SQL_MAX_OPEN_CONNS, default 32; SQLite keeps its 4).
	SQLMaxOpenConns int
	RedisConnString string
	// RedisKeyPrefix starts every key modelgate writes to Redis, so several
	// deployments can share one server.
	RedisKeyPrefix string
	// TurnstileVerifyURL is Cloudflare Turnstile's siteverify endpoint
	// (TURNSTILE_VERIFY_URL; tests point it at a fake).
	TurnstileVerifyURL string
	// GitHubOAuthBaseURL and GitHubAPIBaseURL are github.com and
	// api.github.com unless overridden (GITHUB_OAUTH_BASE_URL,
	// GITHUB_API_BASE_URL: GitHub Enterprise, tests).
	GitHubOAuthBaseURL string
	GitHubAPIBaseURL   string

	SessionSecret string
	// SessionSecretGenerated is true when SESSION_SECRET was unset and a random
	// one was made for this start: sessions then end with the process.
	SessionSecretGenerated bool

	InitialRootPassword string
	RootAccessToken     string
	LogLevel            slog.Level
	// ShutdownTimeout bounds how long a stop waits for in-flight calls
	// (long streams) before it ends them; every call is settled either way.
	ShutdownTimeout time.Duration
	// ShutdownDelay is how long a stop keeps serving, with /readyz already
	// answering 503, before it closes the port (SHUTDOWN_DELAY, default 0):
	// time for a load balancer to take the node out of rotation.
	ShutdownDelay time.Duration
	// ConfigPollInterval is the fallback of config propagation: how often
	// a node re-reads options, routes and prices and checks the config
	// version, and how long a cached API key is trusted
	// (CONFIG_POLL_INTERVAL, default 10s).
	ConfigPollInterval time.Duration
	// BodyReadTimeout bounds reading one /v1 request body (a stalled
	// upload); it never limits a response or a stream.
	BodyReadTimeout time.Duration
	// PasswordCost is the bcrypt cost of new password hashes; 0 is the
	// default (10). No variable sets it: only test harnesses lower it.
	PasswordCost int
	// BillingLease tunes the lease each process on a shared database holds
	// for its reservations (docs/operations.md). No variable sets it: zero
	// fields take the defaults; only test harnesses shorten them.
	BillingLease BillingLease

	Cluster Cluster

	// MetricsToken enables GET /metrics for "Authorization: Bearer
	// <token>" (METRICS_TOKEN); empty: /metrics answers 404.
	MetricsToken string
	// MetricsListen is a second address serving only /metrics
	// (METRICS_LISTEN, e.g. 127.0.0.1:9090); empty: none.
	MetricsListen string
	// LogFormat is "text" (default) or "json" (LOG_FORMAT).
	LogFormat string
	// Traces is where OpenTelemetry spans go (TracesURL empty: traces
	// off), from the standard OTEL_EXPORTER_OTLP_* variables (traces.go).
	Traces Traces
}

// BillingLease: a process renews its lease every RenewEvery (default 10 s);
// a lease not renewed for TTL (default 30 s) expires, and every process
// looks for expired leases every SweepEvery (default 5 s).
type BillingLease struct {
	TTL, RenewEvery, SweepEvery time.Duration
}

// Cluster holds the cluster variables. They are read and validated now; the
// cluster issue uses them. Enabled is true when CLUSTER_NODE_ID is set.
type Cluster struct {
	Enabled     bool
	NodeID      int
	NodeName    string
	NodeAddress string
	Secret      string
	// PreviousSecret is CLUSTER_PREVIOUS_SECRET: set during a rotation of
	// CLUSTER_SECRET, still accepted from peers and used to sign calls
	// a peer refuses until it learned the new one (docs/cluster.md).
	PreviousSecret  string
	PingInterval    time.Duration
	PushInterval    time.Duration
	MaxPingFailures int
	BatchSize       int
	// SyncLogs replicates logs too (CLUSTER_SYNC_LOGS, default true).
	SyncLogs bool
	// MaxClockSkew is how far past this node's clock a received event may
	// be dated (CLUSTER_MAX_CLOCK_SKEW, default 5m): a batch with one
	// dated later is refused, and the hybrid clock never runs further
	// ahead.
	MaxClockSkew time.Duration
}

// Load reads the configuration from args (without the program name) and
// getenv. Every problem found is reported in one error.
func Load(args []string, getenv func(string) string) (Config, error) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	intVar := func(name string, def int) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			bad("%s: %q is not an integer", name, v)
			return def
		}
		return n
	}
	durationVar := func(name string, def time.Duration) time.Duration {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("%s: %q is not a positive Go duration such as 10s", name, v)
			return def
		}
		return d
	}

	c := Config{
		Port:                intVar("PORT", 3000),
		DataDir:             orDefault(getenv("DATA_DIR"), "./data"),
		SQLDSN:              strings.TrimSpace(getenv("SQL_DSN")),
		SQLitePath:          strings.TrimSpace(getenv("SQLITE_PATH")),
		RedisConnString:     strings.TrimSpace(getenv("REDIS_CONN_STRING")),
		RedisKeyPrefix:      orDefault(getenv("REDIS_KEY_PREFIX"), "modelgate:"),
		SessionSecret:       getenv("SESSION_SECRET"),
		InitialRootPassword: getenv("INITIAL_ROOT_PASSWORD"),
		RootAccessToken:     strings.TrimSpace(getenv("ROOT_ACCESS_TOKEN")),
		TurnstileVerifyURL:  orDefault(strings.TrimSpace(getenv("TURNSTILE_VERIFY_URL")), "https://challenges.cloudflare.com/turnstile/v0/siteverify"),
		GitHubOAuthBaseURL:  strings.TrimRight(orDefault(strings.TrimSpace(getenv("GITHUB_OAUTH_BASE_URL")), "https://github.com"), "/"),
		GitHubAPIBaseURL:    strings.TrimRight(orDefault(strings.TrimSpace(getenv("GITHUB_API_BASE_URL")), "https://api.github.com"), "/"),
	}

	c.SQLMaxOpenConns = intVar("SQL_MAX_OPEN_CONNS", 32)
	if c.SQLMaxOpenConns < 2 || c.SQLMaxOpenConns > 1000 {
		bad("SQL_MAX_OPEN_CONNS: must be 2 to 1000")
	}
	c.ShutdownTimeout = durationVar("SHUTDOWN_TIMEOUT", 30*time.Second)
	c.BodyReadTimeout = durationVar("BODY_READ_TIMEOUT", 60*time.Second)
	if v := strings.TrimSpace(getenv("SHUTDOWN_DELAY")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad("SHUTDOWN_DELAY: %q is not a Go duration such as 5s (0 for none)", v)
		}
		c.ShutdownDelay = d
	}
	c.ConfigPollInterval = durationVar("CONFIG_POLL_INTERVAL", 10*time.Second)

	fs := flag.NewFlagSet("modelgate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.Port, "port", c.Port, "listen port (PORT)")
	c.ListenAddr = strings.TrimSpace(getenv("LISTEN_ADDR"))
	fs.StringVar(&c.ListenAddr, "listen", c.ListenAddr, "listen address host:port (LISTEN_ADDR), wins over --port")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory (DATA_DIR)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "wait for in-flight calls on stop (SHUTDOWN_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		bad("flags: %v", err)
	}
	if _, _, err := dsn.Parse(c.SQLDSN); err != nil {
		bad("SQL_DSN: %v", err)
	}
	if c.SQLitePath == "" {
		c.SQLitePath = filepath.Join(c.DataDir, "modelgate.db")
	}
	if c.Port < 0 || c.Port > 65535 {
		bad("PORT: %d is not a port number", c.Port)
	}
	if c.ListenAddr == "" {
		c.ListenAddr = fmt.Sprintf(":%d", c.Port)
	} else if msg := checkListenAddr(c.ListenAddr); msg != "" {
		bad("LISTEN_ADDR: %q %s", c.ListenAddr, msg)
	}
	if c.BodyReadTimeout <= 0 || c.BodyReadTimeout > time.Hour {
		bad("BODY_READ_TIMEOUT: %v is not between 0s (excluded) and 1h", c.BodyReadTimeout)
	}
	if c.ShutdownTimeout <= 0 || c.ShutdownTimeout > maxShutdownTimeout {
		bad("SHUTDOWN_TIMEOUT: %v is not between 0s (excluded) and %v", c.ShutdownTimeout, maxShutdownTimeout)
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > maxShutdownTimeout {
		bad("SHUTDOWN_DELAY: %v is not between 0s and %v", c.ShutdownDelay, maxShutdownTimeout)
	}
	if c.ConfigPollInterval < time.Second || c.ConfigPollInterval > 24*time.Hour {
		bad("CONFIG_POLL_INTERVAL: %v is not between 1s and 24h", c.ConfigPollInterval)
	}
	if c.SessionSecret == "" {
		c.SessionSecret = rand.Text() + rand.Text()
		c.SessionSecretGenerated = true
	} else if len(c.SessionSecret) < 16 {
		bad("SESSION_SECRET: use at least 16 characters")
	}
	if p := c.InitialRootPassword; p != "" && (len(p) < 8 || len(p) > 64) {
		bad("INITIAL_ROOT_PASSWORD: must be 8 to 64 characters")
	}
	if t := c.RootAccessToken; t != "" && len(t) < 16 {
		bad("ROOT_ACCESS_TOKEN: use at least 16 characters")
	}
	if c.RedisConnString != "" {
		if u, err := url.Parse(c.RedisConnString); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			bad("REDIS_CONN_STRING: expected redis://host:port/db")
		}
	}
	c.MetricsToken = strings.TrimSpace(getenv("METRICS_TOKEN"))
	c.MetricsListen = strings.TrimSpace(getenv("METRICS_LISTEN"))
	if t := c.MetricsToken; t != "" && len(t) < 16 {
		bad("METRICS_TOKEN: use at least 16 characters")
	}
	if c.MetricsListen != "" && c.MetricsToken == "" {
		bad("METRICS_LISTEN: set METRICS_TOKEN too; /metrics is served only with it")
	}
	c.Traces = loadTraces(getenv, bad)
	c.LogFormat = strings.ToLower(orDefault(getenv("LOG_FORMAT"), "text"))
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LOG_FORMAT: %q is not text or json", getenv("LOG_FORMAT"))
	}
	if err := c.LogLevel.UnmarshalText([]byte(orDefault(getenv("LOG_LEVEL"), "info"))); err != nil {
		bad("LOG_LEVEL: %q is not one of debug, info, warn, error", getenv("LOG_LEVEL"))
	}

	cl := &c.Cluster
	cl.NodeID = intVar("CLUSTER_NODE_ID", 0)
	cl.Enabled = strings.TrimSpace(getenv("CLUSTER_NODE_ID")) != ""
	cl.NodeName = strings.TrimSpace(getenv("CLUSTER_NODE_NAME"))
	cl.NodeAddress = strings.TrimSpace(getenv("CLUSTER_NODE_ADDRESS"))
	cl.Secret = getenv("CLUSTER_SECRET")
	cl.PreviousSecret = getenv("CLUSTER_PREVIOUS_SECRET")
	cl.PingInterval = durationVar("CLUSTER_PING_INTERVAL", 10*time.Second)
	cl.PushInterval = durationVar("CLUSTER_PUSH_INTERVAL", time.Second)
	cl.MaxPingFailures = intVar("CLUSTER_MAX_PING_FAILURES", 3)
	cl.BatchSize = intVar("CLUSTER_BATCH_SIZE", 50)
	cl.MaxClockSkew = durationVar("CLUSTER_MAX_CLOCK_SKEW", 5*time.Minute)
	cl.SyncLogs = true
	if v := strings.TrimSpace(getenv("CLUSTER_SYNC_LOGS")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("CLUSTER_SYNC_LOGS: %q is not true or false", v)
		}
		cl.SyncLogs = b || err != nil
	}
	if cl.Enabled {
		if cl.NodeID < 1 || cl.NodeID > 49 {
			bad("CLUSTER_NODE_ID: must be 1 to 49")
		}
		if cl.NodeName == "" {
			cl.NodeName = fmt.Sprintf("node-%d", cl.NodeID)
		}
		if cluster.CheckName(cl.NodeName) != "" {
			bad("CLUSTER_NODE_NAME: must be 1 to %d characters of text without control characters", cluster.MaxNameChars)
		}
		cl.NodeAddress = strings.TrimRight(cl.NodeAddress, "/")
		if cl.NodeAddress == "" || cluster.CheckAddress(cl.NodeAddress) != "" {
			bad("CLUSTER_NODE_ADDRESS: required in cluster mode, a base URL with http:// or https:// and a host, without user info, query or fragment, at most %d characters", cluster.MaxAddressChars)
		}
		if cl.Secret == "" {
			bad("CLUSTER_SECRET: required in cluster mode")
		} else if cluster.CheckSecret(cl.Secret, true) != "" {
			bad("CLUSTER_SECRET: must be at most %d characters of text without control characters", cluster.MaxSecretChars)
		}
		if cluster.CheckSecret(cl.PreviousSecret, false) != "" {
			bad("CLUSTER_PREVIOUS_SECRET: must be at most %d characters of text without control characters", cluster.MaxSecretChars)
		} else if cl.PreviousSecret != "" && cl.PreviousSecret == cl.Secret {
			bad("CLUSTER_PREVIOUS_SECRET: must differ from CLUSTER_SECRET (leave it unset outside a rotation)")
		}
	}
	if cl.MaxPingFailures < 1 || cl.MaxPingFailures > 1000 {
		bad("CLUSTER_MAX_PING_FAILURES: must be 1 to 1000")
	}
	if cl.BatchSize < 1 || cl.BatchSize > 1000 {
		bad("CLUSTER_BATCH_SIZE: must be 1 to 1000")
	}
	if cl.MaxClockSkew < time.Second || cl.MaxClockSkew > 24*time.Hour {
		bad("CLUSTER_MAX_CLOCK_SKEW: must be between 1s and 24h")
	}

	if len(problems) > 0 {
		return c, errors.New("configuration: " + strings.Join(problems, "; "))
	}
	return c, nil
}

// maxShutdownTimeout bounds SHUTDOWN_TIMEOUT: a stop that waits longer
// risks being killed by the supervisor (systemd, Kubernetes) before the
// streams it ends are settled.
const maxShutdownTimeout = time.Hour

// checkListenAddr says what is wrong with a LISTEN_ADDR ("" when nothing):
// host:port with a numeric port, the host a name, an IP or empty (every
// interface); an IPv6 host in brackets.
func checkListenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "is not host:port (e.g. 127.0.0.1:3000, [::1]:3000 or :3000)"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strconv.Itoa(n) != port {
		return "has no port number 0 to 65535"
	}
	if strings.ContainsAny(host, " /\t\n\x00") {
		return "has an invalid host"
	}
	return ""
}

// ListenPort is the port of ListenAddr, for messages and the health
// check's own request (0 when it cannot be read).
func (c Config) ListenPort() int {
	_, port, err := net.SplitHostPort(c.Addr())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(port)
	return n
}

// Addr is the address to bind: ListenAddr, or ":<Port>" when that is empty.
func (c Config) Addr() string {
	if c.ListenAddr != "" {
		return c.ListenAddr
	}
	return fmt.Sprintf(":%d", c.Port)
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v == "" {
		return def
	}
	return v
}
