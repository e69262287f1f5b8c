// Package gatewayproc builds the modelgate binary and drives it as a child
// process for the measuring programs (cmd/bench, cmd/clustersoak): the
// build, a free loopback port, the child's clean environment, and calls of
// the /api envelope. It is not used by the gateway itself.
package gatewayproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles ./cmd/modelgate of the module the caller runs in into dir
// and names the commit it was built from (git describe, "-dirty" when the
// tree had changes; empty outside a git checkout).
func Build(ctx context.Context, dir string) (bin, source string, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("run inside the modelgate module (go run ./cmd/...)")
	}
	bin = filepath.Join(dir, "modelgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/modelgate")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build ./cmd/modelgate: %w\n%s", err, out)
	}
	git := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	git.Dir = cmd.Dir
	if out, err := git.Output(); err == nil {
		source = strings.TrimSpace(string(out))
	}
	return bin, source, nil
}

// ChildEnv is the environment of every process a measuring program starts:
// only what running a Go program needs plus the Go runtime's own knobs, so
// no setting of the caller's shell (SQL_DSN, PORT…) leaks into a gateway.
func ChildEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// FreePort asks the kernel for a free loopback port. Another process could
// take it before the gateway binds it; on a measuring machine none does.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Call makes one management API call and decodes its data. The /api
// envelope reports failures as success:false, often with HTTP 200. bearer
// is sent as "Authorization: Bearer …" when not empty.
func Call(ctx context.Context, c *http.Client, method, url, bearer string, body, data any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var env struct {
		Success bool            `json:"success"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("HTTP %d, not the /api envelope: %s", resp.StatusCode, Abbreviate(raw))
	}
	if resp.StatusCode != http.StatusOK || !env.Success {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, env.Message)
	}
	if data != nil && len(env.Data) > 0 {
		return json.Unmarshal(env.Data, data)
	}
	return nil
}

// Abbreviate shortens a response body to one line for an error message.
func Abbreviate(b []byte) string {
	const limit = 200
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
