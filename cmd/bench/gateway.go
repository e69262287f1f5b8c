package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// apiClient makes the bench's own calls: seeding, readiness, the mock's
// /bench endpoints.
var apiClient = &http.Client{Timeout: 10 * time.Second}

// gatewayInfo is how the gateway was obtained and why it was or was not
// measured.
type gatewayInfo struct {
	Binary       string  `json:"binary"`
	Source       string  `json:"source,omitempty"` // git describe of the built tree
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	Status       string  `json:"status"` // "measured", or why not
	LogTail      string  `json:"log_tail,omitempty"`
}

// planInfo is why the plan-billed target (the gateway, called with the
// key of a user whose calls only a plan pays) was or was not measured.
type planInfo struct {
	Status  string `json:"status"` // "measured", or why not
	LogTail string `json:"log_tail,omitempty"`
}

// The gateway's targets: the same process and base URL, called with the
// key of a user with balance, or of a user with a plan and no balance.
const (
	targetGateway = "gateway"
	targetPlan    = "gateway-plan"
	targetLimits  = "gateway-limits"
)

// Gateway statuses (of both gateway targets).
const (
	gatewayMeasured     = "measured"
	gatewayNoRelay      = "relay not available"
	gatewayRelayFailing = "relay answers errors"
)

// gatewaySecrets are generated per run.
type gatewaySecrets struct {
	rootPassword, rootToken, sessionSecret string
	metricsToken                           string // METRICS_TOKEN: /metrics is read for the round trips
}

func newGatewaySecrets() gatewaySecrets {
	return gatewaySecrets{rootPassword: rand.Text(), rootToken: rand.Text(), sessionSecret: rand.Text(), metricsToken: rand.Text()}
}

// startGateway runs bin on a free loopback port and waits until GET
// /api/status answers. Its database is sqlDSN (SQL_DSN), or with an empty
// sqlDSN a fresh SQLite database under dir.
func startGateway(ctx context.Context, bin, dir string, s gatewaySecrets, sqlDSN string) (*proc, string, error) {
	port, err := gatewayproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	logPath := filepath.Join(dir, "modelgate.log")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, logPath, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, logPath, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin)
	cmd.Env = append(gatewayproc.ChildEnv(),
		"DATA_DIR="+filepath.Join(dir, "data"),
		"PORT="+strconv.Itoa(port),
		"INITIAL_ROOT_PASSWORD="+s.rootPassword,
		"ROOT_ACCESS_TOKEN="+s.rootToken,
		"SESSION_SECRET="+s.sessionSecret,
		"METRICS_TOKEN="+s.metricsToken,
		"LOG_LEVEL=warn",
	)
	if sqlDSN != "" {
		cmd.Env = append(cmd.Env, "SQL_DSN="+sqlDSN)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = gatewayproc.ChildSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, logPath, fmt.Errorf("start gateway: %w", err)
	}
	p := &proc{name: "gateway", cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	go p.wait()
	base := "http://" + p.addr
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if p.exited() {
			return nil, logPath, fmt.Errorf("gateway exited before it was ready: %v", p.err)
		}
		if gatewayproc.Call(ctx, apiClient, http.MethodGet, base+"/api/status", "", nil, nil) == nil {
			return p, logPath, nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			p.stop(5 * time.Second)
			return nil, logPath, ctx.Err()
		}
	}
	p.stop(5 * time.Second)
	return nil, logPath, errors.New("gateway not ready within 30 s")
}

// seedGateway creates through the management API what a call of
// bench-model needs: a channel to the mock, a price, a user with balance,
// and that user's API key, which it returns.
func seedGateway(ctx context.Context, base, rootToken, mockBase string) (string, error) {
	root := apiClient
	steps := []struct {
		what, path string
		body       any
		out        any
	}{
		{"create channel", "/api/channel/", map[string]any{"type": 1, "name": "bench", "key": upstreamKey,
			"base_url": mockBase, "models": "bench-model", "group": "default"}, nil},
		{"create model price", "/api/model_price/", map[string]any{"model_name": "bench-model", "input_price": 1, "output_price": 2}, nil},
	}
	for _, s := range steps {
		if err := gatewayproc.Call(ctx, root, http.MethodPost, base+s.path, rootToken, s.body, s.out); err != nil {
			return "", fmt.Errorf("%s: %w", s.what, err)
		}
	}
	var u struct{ ID int64 }
	if err := gatewayproc.Call(ctx, root, http.MethodPost, base+"/api/user/", rootToken,
		map[string]any{"username": "bench", "password": "bench-password"}, &u); err != nil {
		return "", fmt.Errorf("create user: %w", err)
	}
	if err := gatewayproc.Call(ctx, root, http.MethodPost, base+"/api/topup", rootToken,
		map[string]any{"user_id": u.ID, "quota": int64(1_000_000_000_000), "remark": "bench"}, nil); err != nil {
		return "", fmt.Errorf("top up: %w", err)
	}
	return userKey(ctx, base, "bench", "bench-password")
}

// benchPlanLimits is the plan's model_limits: bench-model with limits no
// run reaches (10^15 requests and tokens per 5 h), so every call is paid by
// the plan and none is refused by it.
const benchPlanLimits = `{"bench-model":{"period_h":5,"request_period":1000000000000000,"token_period":1000000000000000}}`

// seedPlanUser creates, after seedGateway, what a plan-billed call of
// bench-model needs: a plan listing the model, a user bench-plan without
// balance (quota 0: a call can only be paid by the plan), a subscription to
// the plan for it, and its API key, which it returns.
func seedPlanUser(ctx context.Context, base, rootToken string) (string, error) {
	var plan struct{ ID int64 }
	if err := gatewayproc.Call(ctx, apiClient, http.MethodPost, base+"/api/plan/", rootToken,
		map[string]any{"name": "bench-plan", "price": 0, "duration_days": 30, "status": 1, "model_limits": benchPlanLimits}, &plan); err != nil {
		return "", fmt.Errorf("create plan: %w", err)
	}
	if plan.ID <= 0 {
		return "", errors.New("create plan: data carries no plan id")
	}
	var u struct{ ID int64 }
	if err := gatewayproc.Call(ctx, apiClient, http.MethodPost, base+"/api/user/", rootToken,
		map[string]any{"username": "bench-plan", "password": "bench-password"}, &u); err != nil {
		return "", fmt.Errorf("create user bench-plan: %w", err)
	}
	if err := gatewayproc.Call(ctx, apiClient, http.MethodPost, base+"/api/subscription/", rootToken,
		map[string]any{"user_id": u.ID, "plan_id": plan.ID, "duration_days": 30}, nil); err != nil {
		return "", fmt.Errorf("create subscription: %w", err)
	}
	return userKey(ctx, base, "bench-plan", "bench-password")
}

// seedLimitsUser creates, after seedGateway, a user bench-limits with
// balance and its API key with rate limits no run reaches (10^9 requests
// and 10^12 tokens a minute, 10^6 in flight), so every call goes through
// the limiter (admission, then settlement) and none is refused. It returns
// the key.
func seedLimitsUser(ctx context.Context, base, rootToken string) (string, error) {
	var u struct{ ID int64 }
	if err := gatewayproc.Call(ctx, apiClient, http.MethodPost, base+"/api/user/", rootToken,
		map[string]any{"username": "bench-limits", "password": "bench-password"}, &u); err != nil {
		return "", fmt.Errorf("create user bench-limits: %w", err)
	}
	if err := gatewayproc.Call(ctx, apiClient, http.MethodPost, base+"/api/topup", rootToken,
		map[string]any{"user_id": u.ID, "quota": int64(1_000_000_000_000), "remark": "bench"}, nil); err != nil {
		return "", fmt.Errorf("top up bench-limits: %w", err)
	}
	return userKey(ctx, base, "bench-limits", "bench-password", map[string]any{
		"rpm_limit": 1_000_000_000, "tpm_limit": int64(1_000_000_000_000), "concurrency_limit": 1_000_000})
}

// userKey logs in as a user and creates its unlimited, never-expiring API
// key (with extra's fields), which it returns.
func userKey(ctx context.Context, base, username, password string, extra ...map[string]any) (string, error) {
	jar, _ := cookiejar.New(nil)
	user := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if err := gatewayproc.Call(ctx, user, http.MethodPost, base+"/api/user/login", "",
		map[string]any{"username": username, "password": password}, nil); err != nil {
		return "", fmt.Errorf("log in as %s: %w", username, err)
	}
	var tok struct{ Key string }
	body := map[string]any{"name": username, "unlimited_quota": true, "expired_time": -1}
	for _, x := range extra {
		maps.Copy(body, x)
	}
	if err := gatewayproc.Call(ctx, user, http.MethodPost, base+"/api/token/", "", body, &tok); err != nil {
		return "", fmt.Errorf("create API key of %s: %w", username, err)
	}
	if !strings.HasPrefix(tok.Key, "sk-") {
		return "", fmt.Errorf("create API key of %s: data.key %q is not a full sk- key", username, tok.Key)
	}
	return tok.Key, nil
}

// probeRelay makes one chat call and one stream call (only the chat call
// for a chat-only target) through the gateway. It returns "" when they
// succeed, otherwise the target's status for the report: the relay not
// being there yet (404, 501) is not the bench's error.
func probeRelay(ctx context.Context, t *target) (string, string) {
	var buf bytes.Buffer
	modes := []bool{false, true}
	if t.chatOnly {
		modes = modes[:1]
	}
	for _, stream := range modes {
		body := chatBody
		if stream {
			body = streamBody
		}
		_, err := t.call(ctx, body, stream, &buf)
		var se *statusError
		switch {
		case err == nil:
			continue
		case errors.As(err, &se) && (se.code == http.StatusNotFound || se.code == http.StatusNotImplemented):
			return gatewayNoRelay, err.Error()
		default:
			return gatewayRelayFailing, err.Error()
		}
	}
	return "", ""
}

// logTail returns the end of the gateway's log for the report.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
