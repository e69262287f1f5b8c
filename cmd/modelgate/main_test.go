package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
)

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A fresh start creates root with a printed random password, listens,
// accepts that password, and stops cleanly on cancel.
func TestFirstStartPrintsAWorkingRootPassword(t *testing.T) {
	apptest.Parallel(t)
	dir := t.TempDir()
	env := map[string]string{"DATA_DIR": dir, "PORT": "0"}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- run(ctx, nil, func(k string) string { return env[k] }, &logs) }()

	var port string
	// Bounds for a hung start or stop only: a loaded machine can take well
	// over 10 s to migrate and listen.
	for deadline := time.Now().Add(2 * time.Minute); port == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listeningAddr.FindStringSubmatch(logs.String()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		t.Fatalf("not listening; log:\n%s", logs.String())
	}
	// Start time is a performance figure, measured outside tests
	// (docs/performance.md); logged here for information only.
	t.Logf("listening after %v", time.Since(start))
	m := regexp.MustCompile(`username=root password=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no root password printed; log:\n%s", logs.String())
	}
	body := `{"username":"root","password":"` + m[1] + `"}`
	resp, err := http.Post("http://127.0.0.1:"+port+"/api/user/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(out.String(), `"success":true`) {
		t.Fatalf("login with the printed password: %s", out.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no clean stop after cancel")
	}
}
