package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// quickStartMarker is the first line of the README's quick start block.
const quickStartMarker = "# modelgate quick start"

// The README's quick start runs as written: the gateway starts as the
// README says (a fresh data dir, the first root password from the README's
// start command), bash runs the quick start block with set -euo pipefail
// against a fake OpenAI upstream, and the final chat call answers. A renamed
// field, a changed route or a broken jq filter in the README fails here.
func TestReadmeQuickStartRuns(t *testing.T) {
	apptest.Parallel(t)
	for _, tool := range []string{"bash", "curl", "jq", "od"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the quick start needs %s", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := quickStartBlock(t, string(readme))
	m := regexp.MustCompile("(?m)^INITIAL_ROOT_PASSWORD=(\\S+) go run ./cmd/modelgate$").FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("the README does not start the gateway with INITIAL_ROOT_PASSWORD=… go run ./cmd/modelgate")
	}
	base := startInProcess(t, map[string]string{"INITIAL_ROOT_PASSWORD": m[1]})
	up := fakeupstream.New(t)

	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+block)
	cmd.Dir = t.TempDir() // the cookie jars
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MODEL=") { // the README's default model, whatever the shell says
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "B="+base, "UPSTREAM_BASE_URL="+up.URL, "UPSTREAM_KEY="+fakeupstream.DefaultKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	t.Logf("quick start output:\n%s", out)
	if !regexp.MustCompile("(?m)^" + fakeupstream.DefaultReply + "$").Match(out) {
		t.Fatalf("the chat call did not print the upstream's reply %q; output:\n%s", fakeupstream.DefaultReply, out)
	}
	if n := len(up.Requests()); n != 2 {
		t.Fatalf("the upstream saw %d requests, want 2: the channel test and the chat call", n)
	}
	// The charge is in alice's log, and what the README says it did holds.
	if !regexp.MustCompile(`(?m)^\{"model_name":"gpt-4o-mini","prompt_tokens":\d+,"completion_tokens":\d+,"quota":[1-9]\d*\}$`).Match(out) {
		t.Fatalf("no charged log line in the output:\n%s", out)
	}
	if r := post(t, base+"/api/user/login", `{"username":"root","password":"`+m[1]+`"}`); !strings.Contains(r, `"success":false`) {
		t.Errorf("root's first password still works: %s", r)
	}
	if r := post(t, base+"/api/user/register", `{"username":"mallory","password":"mallory-password"}`); !strings.Contains(r, `"success":false`) {
		t.Errorf("registration is still open: %s", r)
	}
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// quickStartBlock is the body of the fenced sh block that starts with the
// marker line.
func quickStartBlock(t *testing.T, readme string) string {
	t.Helper()
	// The block stops at the first failure for a reader as for the test
	// (issue 30 §5: without it, a failed login went on to print a password
	// that was never set).
	start := "```sh\nset -euo pipefail\n" + quickStartMarker
	i := strings.Index(readme, start)
	if i < 0 {
		t.Fatalf("no ```sh block starting with set -euo pipefail and %q in the README", quickStartMarker)
	}
	body := readme[i+len("```sh\n"):]
	end := strings.Index(body, "\n```")
	if end < 0 {
		t.Fatal("the quick start block is not closed")
	}
	return body[:end+1]
}

// startInProcess serves the gateway through run, as main does, on a free
// port with a fresh data dir, and returns its base URL.
func startInProcess(t *testing.T, env map[string]string) string {
	t.Helper()
	vars := map[string]string{"DATA_DIR": t.TempDir(), "PORT": "0"}
	for k, v := range env {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return vars[k] }, w) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		w.Close()
		r.Close()
	})
	port := listeningPort(r)
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p
	case err := <-done:
		done <- nil // for the cleanup
		t.Fatalf("the gateway stopped at start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway is not listening")
	}
	return ""
}
