package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A modelgate process killed with SIGKILL in the middle of streaming calls
// on a shared database leaves money held; another process on the same
// database gives every hold back within a minute (the dead process's
// billing lease expires after 30 s), either while running ("janitor": two
// survivors race to release) or when it starts after the lease expired
// ("restart"). Every balance then equals what it was minus the charges that
// were logged: nothing is kept, nothing is returned twice.
func TestKilledProcessHoldsComeBack(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a real process and waits for its lease to expire")
	}
	// Once per CI pass: the engine the HTTP suites run on.
	eng := storetest.Selected(t)
	if eng.Name == "sqlite" {
		t.Skipf("holds on SQLite live in memory and die with the process; set %s=postgres or mysql", storetest.EnvEngine)
	}
	bin := buildGateway(t)
	for _, survivor := range []string{"janitor", "restart"} {
		t.Run(survivor, func(t *testing.T) {
			t.Parallel()
			killMidLoad(t, bin, eng.FreshDSN(t), survivor == "restart")
		})
	}
}

const (
	streamingCalls = 30
	limitedQuota   = 3_000_000
)

func killMidLoad(t *testing.T, bin, dsn string, restart bool) {
	up := fakeupstream.New(t)
	child, url := startProcess(t, bin, dsn)
	g := apptest.Attach(t, url).NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	initial := int64(10_000_000) // NewGateway's default balance
	limited := g.User.CreateToken(map[string]any{"name": "limited", "remain_quota": limitedQuota, "unlimited_quota": false}).Key

	// Some calls finish and are charged before the crash.
	for i := range 10 {
		key := []string{g.Key, limited}[i%2]
		if r := g.Env.Call(key, "POST", "/v1/chat/completions", chat(false)); r.Status != 200 {
			t.Fatalf("quick call: %d %s", r.Status, r.Body)
		}
	}
	// The rest stream slowly and hold money when the process dies.
	up.SetBehavior(fakeupstream.Behavior{Reply: strings.Repeat("word ", 300), Chunks: 300, ChunkDelay: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started, ended sync.WaitGroup
	for i := range streamingCalls {
		started.Add(1)
		ended.Add(1)
		go func() {
			defer ended.Done()
			streamUntilCut(ctx, t, url, []string{g.Key, limited}[i%2], started.Done)
		}()
	}
	waitOrFail(t, &started, 30*time.Second, "streams to start")
	var before apptest.UserInfo
	g.Root.OK("GET", apptest.Path("/api/user/%d", g.UserID), nil).Decode(t, &before)

	if err := child.Process.Kill(); err != nil { // SIGKILL: nothing settles, nothing is released
		t.Fatal(err)
	}
	child.Wait()
	killed := time.Now()
	waitOrFail(t, &ended, 10*time.Second, "streams to end with the process")

	if restart {
		// Start only once the dead lease has expired: the new process must
		// return its holds at start, before its own janitor's first round.
		time.Sleep(defaultLeaseWait)
	}
	next := apptest.New(t, "SQL_DSN", dsn)
	if !restart {
		// Two survivors run their janitors in step: the holds come back once.
		apptest.New(t, "SQL_DSN", dsn)
	}
	sg := &apptest.Gateway{Env: next, Root: next.Root(), UserID: g.UserID}
	sg.User = next.Client()
	sg.User.Login("caller", "password-caller")
	for {
		quota, remain := sg.Quota(g.UserID), limitedRemain(t, sg.User)
		charged, chargedLimited := consumed(sg.AllConsumeLogs(), g.UserID)
		wantQuota, wantRemain := initial-charged, limitedQuota-chargedLimited
		if quota == wantQuota && remain == wantRemain {
			if before.Quota >= wantQuota {
				t.Fatalf("nothing was held at the kill: balance %d, final %d", before.Quota, wantQuota)
			}
			t.Logf("balances whole %v after the kill (%d held at the kill)", time.Since(killed).Round(time.Second), wantQuota-before.Quota)
			return
		}
		if restart || time.Since(killed) > time.Minute {
			t.Fatalf("%v after the kill: balance %d, want %d (initial %d − charged %d); limited key %d, want %d",
				time.Since(killed).Round(time.Second), quota, wantQuota, initial, charged, remain, wantRemain)
		}
		time.Sleep(time.Second)
	}
}

// listeningAddr finds the port in the gateway's "listening" log line.
var listeningAddr = regexp.MustCompile(`msg="modelgate listening" addr=\S*:(\d+)`)

// listeningPort reads the gateway's log from r, to its end, and sends the
// port it listens on once it says so.
func listeningPort(r io.Reader) <-chan string {
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	return port
}

// defaultLeaseWait outlasts the default lease TTL (30 s) of the killed
// process.
const defaultLeaseWait = 32 * time.Second

// startProcess runs the built gateway on dsn and returns it with its URL.
func startProcess(t *testing.T, bin, dsn string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "SQL_DSN="+dsn, "PORT=0", "DATA_DIR="+t.TempDir(), "LOG_LEVEL=info",
		"INITIAL_ROOT_PASSWORD="+apptest.RootPassword, "ROOT_ACCESS_TOKEN="+apptest.RootAccessToken,
		"SESSION_SECRET="+apptest.SessionSecret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := listeningPort(stderr)
	select {
	case p := <-port:
		return cmd, "http://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway process is not listening")
		return nil, ""
	}
}

func chat(stream bool) map[string]any {
	return map[string]any{"model": "gpt-test", "stream": stream,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}}
}

// streamUntilCut makes a streaming call, reports once its first bytes
// arrived (its hold is committed by then) and reads until the connection
// dies.
func streamUntilCut(ctx context.Context, t *testing.T, url, key string, started func()) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("stream: %v", err)
		started()
		return
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil || resp.StatusCode != 200 {
		t.Errorf("stream: status %d, %v", resp.StatusCode, err)
	}
	started()
	io.Copy(io.Discard, resp.Body)
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// consumed sums the logged charges of the user, and of its key "limited".
func consumed(logs []apptest.LogInfo, userID int64) (all, limited int64) {
	if len(logs) >= 100 {
		panic(fmt.Sprintf("%d consume logs: raise the page size", len(logs)))
	}
	for _, l := range logs {
		if l.UserID == userID {
			all += l.Quota
			if l.TokenName == "limited" {
				limited += l.Quota
			}
		}
	}
	return all, limited
}

func limitedRemain(t *testing.T, user *apptest.Client) int64 {
	t.Helper()
	var toks []apptest.TokenInfo
	user.OK("GET", "/api/token/?page_size=100", nil).Decode(t, &toks)
	for _, tok := range toks {
		if tok.Name == "limited" {
			return tok.RemainQuota
		}
	}
	t.Fatal("no key named limited")
	return 0
}
